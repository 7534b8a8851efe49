"""Bearer authentication (contract 5.1 and 5.2): workspace API keys, browser tokens and the
resource tokens of the Agents MCP server. The MCP server's OAuth tokens themselves are refused
(5.1.2): they are for /mcp only.

`request.auth` is an `apps.api.credentials.Credential` whichever kind authenticated.
"""

from rest_framework.authentication import BaseAuthentication

from apps.api.credentials import Credential
from apps.api.errors import REALM
from apps.common.errors import BadRequest, Unauthorized
from apps.mcp_server.oauth import is_oauth_token
from apps.mcp_server.resource_tokens import (
    is_resource_token,
    resource_token_verify,
    service_audience,
)
from apps.workspaces.browser_tokens import browser_token_verify, is_browser_token
from apps.workspaces.services import api_key_authenticate

SERVICE_AGENT_KEY_HEADER = "X-Service-Agent-Key"


def credential_from(raw: str, *, audience: str) -> Credential:
    if is_browser_token(raw):
        token, minting_key, counted = browser_token_verify(raw_token=raw)
        return Credential.for_browser_token(token, minting_key, counted)
    if is_resource_token(raw):
        resource_token, grant_key, counted = resource_token_verify(raw_token=raw, audience=audience)
        return Credential.for_resource_token(resource_token, grant_key, counted)
    if is_oauth_token(raw):
        raise Unauthorized(
            "This is an OAuth token of the Agents MCP server; it works on /mcp only. The REST "
            "API takes an API key, a browser token or the MCP server's resource token."
        )
    key, counted = api_key_authenticate(raw_key=raw)
    return Credential.for_api_key(key, counted)


def _authenticated(request, raw: str) -> tuple[None, Credential]:
    credential = credential_from(raw, audience=service_audience(request._request))
    # Only the public part ever reaches the request log.
    request._request.api_key_prefix = credential.public_id
    # For wrappers outside DRF (the browser CORS headers) that see the Django request only.
    request._request.api_credential = credential
    return (None, credential)


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <API key or browser token>`."""

    def authenticate(self, request) -> tuple[None, Credential]:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            raise Unauthorized("Missing API key: send 'Authorization: Bearer <key>'.")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("The Authorization header must be 'Bearer <key>'.")
        return _authenticated(request, token.strip())

    def authenticate_header(self, request) -> str:
        # Without this DRF would turn every 401 into a 403.
        return f'Bearer realm="{REALM}"'


class ServiceAgentKeyAuthentication(BaseAuthentication):
    """`X-Service-Agent-Key: <API key>`, the header the contract keeps for the browser-token
    endpoint (4.5). Absent, the Bearer header is read next; both with different values is 400."""

    def authenticate(self, request) -> tuple[None, Credential] | None:
        raw = request.headers.get(SERVICE_AGENT_KEY_HEADER, "").strip()
        if not raw:
            return None
        bearer = request.META.get("HTTP_AUTHORIZATION", "")
        if bearer and bearer.partition(" ")[2].strip() != raw:
            raise BadRequest(
                f"Send the API key in one header: {SERVICE_AGENT_KEY_HEADER} or Authorization, "
                "not two different keys."
            )
        return _authenticated(request, raw)

    def authenticate_header(self, request) -> str:
        return f'Bearer realm="{REALM}"'
