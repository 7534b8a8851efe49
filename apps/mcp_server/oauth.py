"""What django-oauth-toolkit needs from us: the scopes a grant may carry, how a grant names its
Agent, and recognisable token formats. The protocol itself is the toolkit's.

A grant is for one Agent: the consent page adds `agent:<agent id>` to the scopes the member
picked, so the Agent travels with the authorization code, the access token and every refreshed
token without a table of our own beside the toolkit's.
"""

import hashlib
import ipaddress
import re
import secrets
from urllib.parse import urlsplit

from django.db import transaction
from oauth2_provider.models import Grant, RefreshToken
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import BaseScopes
from oauthlib.oauth2.rfc6749 import errors

from apps.api.scopes import ALL_SCOPES

AGENT_SCOPE_PREFIX = "agent:"
ACCESS_TOKEN_PREFIX = "oat_"
REFRESH_TOKEN_PREFIX = "ort_"

# Every permission of contract 5.3 except minting API keys: a key made through a connected
# application would outlive the revocation of its grant.
GRANTABLE_SCOPES: dict[str, str] = {
    name: text for name, text in ALL_SCOPES.items() if name != "api_keys:create"
}


# What the MCP server's tools need (apps.mcp_server.server): the 401 challenge and the
# protected-resource metadata name these, and the consent page pre-ticks only these, so a client
# that follows the MCP specification asks for what it can use, not for every permission.
TOOL_SCOPES = ["conversations:read", "knowledge:read", "runs:read", "usage:read"]
# Asked for when a client names no scope: what the tools need.
DEFAULT_SCOPES = TOOL_SCOPES

# The only grants: authorization code (with PKCE S256) and refresh, as OAuth 2.1 and the MCP
# authorization specification ask. A registration naming another is refused, and the token
# endpoint refuses any other grant even for a client registered before this rule.
GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
MAX_CLIENT_NAME_LENGTH = 255
TOKEN_ENDPOINT_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")

_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*$")
# Schemes that are not a native app's private-use scheme (RFC 8252 7.1) and that a browser
# would act on in the authorization server's name: never a redirect target.
_REFUSED_SCHEMES = frozenset(
    {
        "javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "ftp", "ws",
        "wss", "mailto", "tel", "sms", "view-source", "intent", "chrome", "resource", "jar",
    }
)  # fmt: skip


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: object) -> str | None:
    """Why `uri` may not be a redirect URI, or None. RFC 8252 and OAuth 2.1: `https` on any
    host, `http` on a loopback host only (a native app's local listener, any port), or a
    private-use scheme (`cursor://...`, `com.example.app:/cb`); no fragment, no whitespace."""
    if not isinstance(uri, str) or not uri:
        return "each redirect URI must be a non-empty string"
    if len(uri) > MAX_REDIRECT_URI_LENGTH:
        return f"a redirect URI may be {MAX_REDIRECT_URI_LENGTH} characters at most"
    if not uri.isascii() or not uri.isprintable() or " " in uri:
        return f"{uri[:80]!r}: a redirect URI is printable ASCII with no spaces"
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
    except ValueError:
        return f"{uri[:80]!r} is not a URI"
    scheme = parts.scheme.lower()
    if parts.fragment or "#" in uri:
        return f"{uri[:80]!r}: a redirect URI has no fragment"
    if scheme == "https":
        return None if host else f"{uri[:80]!r} names no host"
    if scheme == "http":
        if _is_loopback(host):
            return None
        return f"{uri[:80]!r}: plain http is allowed on a loopback host only; use https"
    if not _SCHEME.match(scheme) or scheme in _REFUSED_SCHEMES:
        return f"{uri[:80]!r}: the scheme {scheme!r} cannot be a redirect URI"
    return None


def client_metadata_problem(data: object) -> str | None:
    """Why a dynamic registration's (RFC 7591) metadata is refused, or None. Fields we do not
    use are ignored, as RFC 7591 asks; those we use must have the right type and value."""
    if not isinstance(data, dict):
        return "The body must be a JSON object of client metadata."
    name = data.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_CLIENT_NAME_LENGTH:
        return f"client_name must be a string of at most {MAX_CLIENT_NAME_LENGTH} characters."
    if "\x00" in name:
        return "client_name may not hold a NUL character."
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= MAX_REDIRECT_URIS:
        return f"redirect_uris must be an array of 1 to {MAX_REDIRECT_URIS} URIs."
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            return f"redirect_uris: {problem}."
    grants = data.get("grant_types", ["authorization_code"])
    if (
        not isinstance(grants, list)
        or not all(isinstance(grant, str) for grant in grants)
        or "authorization_code" not in grants
        or not set(grants) <= set(GRANT_TYPES)
    ):
        return (
            "grant_types: this server offers authorization_code (with PKCE S256) and "
            'refresh_token only; register with ["authorization_code", "refresh_token"].'
        )
    responses = data.get("response_types", ["code"])
    if not isinstance(responses, list) or responses != ["code"] * len(responses) or not responses:
        return 'response_types: this server offers ["code"] only.'
    method = data.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in TOKEN_ENDPOINT_AUTH_METHODS:
        return (
            f"token_endpoint_auth_method must be one of: {', '.join(TOKEN_ENDPOINT_AUTH_METHODS)}."
        )
    return None


# RFC 8707: what a grant may be for. This service's MCP server, named as its protected-resource
# metadata names it (`<origin>/mcp`), or by the service's origin alone (the MCP authorization
# specification lets a client name a server either way); a trailing slash and a default port
# are the same name. Anything else (another host, another path of ours, such as /v1, which
# takes no OAuth token) is `invalid_target`.
MCP_PATH = "/mcp"
_RESOURCE_PATHS = ("", MCP_PATH)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def service_origin(request) -> str:
    """This service's origin as the request reached it (what the metadata documents name)."""
    return f"{request.scheme}://{request.get_host()}"


def mcp_resource(origin: str) -> str:
    """The MCP server's resource identifier, `origin` being this service's as the request
    reached it (`https://host[:port]`)."""
    return f"{origin}{MCP_PATH}"


def _resource_name(uri: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or parts.query or "#" in uri:
        return None
    scheme = parts.scheme.lower()
    return (
        scheme,
        (parts.hostname or "").lower(),
        port or _DEFAULT_PORTS.get(scheme),
        parts.path.rstrip("/"),
    )


def resource_problem(resource: str, *, origin: str) -> str | None:
    """Why a `resource` indicator (RFC 8707) names nothing this server grants access to, or
    None when it names this service's MCP server."""
    name = _resource_name(resource)
    ours = _resource_name(origin)
    if (
        name is not None
        and ours is not None
        and name[:3] == ours[:3]
        and name[3] in _RESOURCE_PATHS
    ):
        return None
    return (
        f"The resource {resource[:200]!r} is not served by this authorization server; it grants "
        f"access to {mcp_resource(origin)} only."
    )


def agent_scope(agent_id: str) -> str:
    return f"{AGENT_SCOPE_PREFIX}{agent_id}"


def split_grant_scopes(scopes: list[str] | str) -> tuple[str | None, list[str]]:
    """(the Agent id a grant names or None, its permissions)."""
    items = scopes.split() if isinstance(scopes, str) else list(scopes)
    agents = [
        item[len(AGENT_SCOPE_PREFIX) :] for item in items if item.startswith(AGENT_SCOPE_PREFIX)
    ]
    permissions = sorted(item for item in items if not item.startswith(AGENT_SCOPE_PREFIX))
    return (agents[0] if len(agents) == 1 else None), permissions


def access_token_generator(request) -> str:
    # A prefix /v1 can recognise, to refuse these tokens with a message saying what they are.
    return f"{ACCESS_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def refresh_token_generator(request) -> str:
    return f"{REFRESH_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def is_oauth_token(raw: str) -> bool:
    return raw.startswith((ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX))


class AgentScopes(BaseScopes):
    def get_all_scopes(self):
        return GRANTABLE_SCOPES

    def get_available_scopes(self, application=None, request=None, *args, **kwargs):
        return list(GRANTABLE_SCOPES)

    def get_default_scopes(self, application=None, request=None, *args, **kwargs):
        return DEFAULT_SCOPES


class AgentGrantValidator(OAuth2Validator):
    def validate_grant_type(self, client_id, grant_type, client, request, *args, **kwargs):
        """Only the code and refresh grants, whatever a client was registered for."""
        if grant_type not in GRANT_TYPES:
            return False
        return super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)

    # A replayed authorization code revokes what it was exchanged for (RFC 6749 4.1.2, OAuth
    # 2.1 4.1.3): whoever replays it may have stolen it, and the first exchange may be theirs.

    def save_bearer_token(self, token, request, *args, **kwargs):
        spent = getattr(request, "refresh_token_instance", None)
        with transaction.atomic():
            if spent is not None and not (
                RefreshToken.objects.select_for_update()
                .filter(pk=spent.pk, revoked__isnull=True)
                .exists()
            ):
                # Concurrent refreshes with one token: the first rotated it while this one
                # waited for the lock. The toolkit would answer the first one's tokens, which
                # are stored hashed and cannot be answered again (it was a 500).
                raise errors.InvalidGrantError(
                    description="This refresh token was just used; use the new one.",
                    request=request,
                )
            super().save_bearer_token(token, request, *args, **kwargs)
        request.issued_refresh_token = token.get("refresh_token")

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        from apps.mcp_server.models import SpentAuthorizationCode

        family = _token_family(getattr(request, "issued_refresh_token", None))
        try:
            super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        except errors.InvalidGrantError:
            # Another exchange of the same code won the race: what this one saved goes.
            RefreshToken.revoke_family(family)
            raise
        SpentAuthorizationCode.objects.create(
            code_checksum=_checksum(code), application=request.client, token_family=family
        )

    # Between checking a code and reading its PKCE challenge and redirect URI, a concurrent
    # exchange of the same code may have spent it (deleted it): the toolkit's reads then raised
    # DoesNotExist, a 500. It is a spent code: invalid_grant.

    def get_code_challenge(self, code, request):
        return _or_spent(
            request, lambda: super(AgentGrantValidator, self).get_code_challenge(code, request)
        )

    def get_code_challenge_method(self, code, request):
        return _or_spent(
            request,
            lambda: super(AgentGrantValidator, self).get_code_challenge_method(code, request),
        )

    def confirm_redirect_uri(self, client_id, code, redirect_uri, client, *args, **kwargs):
        return _or_spent(
            kwargs.get("request") or (args[0] if args else None),
            lambda: super(AgentGrantValidator, self).confirm_redirect_uri(
                client_id, code, redirect_uri, client, *args, **kwargs
            ),
        )

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        from apps.mcp_server.models import SpentAuthorizationCode

        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        spent = SpentAuthorizationCode.objects.filter(
            code_checksum=_checksum(code), application=client
        ).first()
        if spent is not None:
            RefreshToken.revoke_family(spent.token_family)
            spent.delete()
        return False

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        """Permissions we know, plus at most one `agent:` scope (the consent page adds it)."""
        agent_id, permissions = split_grant_scopes(scopes)
        agent_items = [item for item in scopes if item.startswith(AGENT_SCOPE_PREFIX)]
        if len(agent_items) > 1 or (agent_items and not agent_id):
            return False
        return super().validate_scopes(client_id, permissions, client, request, *args, **kwargs)


def _or_spent(request, read):
    try:
        return read()
    except Grant.DoesNotExist:
        raise errors.InvalidGrantError(request=request) from None


def _checksum(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _token_family(raw_refresh_token: str | None):
    if not raw_refresh_token:
        return None
    return (
        RefreshToken.objects.filter(token_checksum=_checksum(raw_refresh_token))
        .values_list("token_family", flat=True)
        .first()
    )
