"""Resource-bound API tokens: what the MCP server exchanges an OAuth access token for.

A token is `art_` followed by a `django.core.signing` value (HMAC-SHA256 under SECRET_KEY with
its own salt) of: token id, the connected application, its grant key's lookup id, the
permissions, the audience (this service's /v1) and the validity window. It lives minutes, never
longer than the access token it came from. Verifying one reads no database beyond the grant
key, which comes from the shared key cache: revoking the connected application revokes that
key, so every token minted from it stops at once, exactly like a revoked API key.
"""

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone

from apps.api.throttling import CountedRequest
from apps.common.errors import Unauthorized
from apps.common.signed_tokens import signed_token, signed_token_payload
from apps.common.time import iso
from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_by_lookup_id_counted, api_key_usable_check

RESOURCE_TOKEN_PREFIX = "art"
_SALT = "apps.mcp_server.resource-token.v1"


@dataclass(frozen=True)
class ResourceToken:
    token_id: str
    connection_id: str
    key_lookup_id: str
    scopes: frozenset[str]
    audience: str
    issued_at: datetime
    expires_at: datetime

    @property
    def public_id(self) -> str:
        """Safe to log and to count requests by: it grants nothing without the signature."""
        return f"{RESOURCE_TOKEN_PREFIX}_{self.token_id}"


def service_audience(request: HttpRequest) -> str:
    """The audience a resource token is bound to: this service's REST API, as the request
    reached it."""
    return f"{request.scheme}://{request.get_host()}/v1"


def is_resource_token(raw: str) -> bool:
    return raw.startswith(f"{RESOURCE_TOKEN_PREFIX}_")


def resource_token_sign(
    *,
    connection_id: str,
    grant_key: ApiKey,
    scopes: list[str],
    audience: str,
    not_after: datetime,
) -> tuple[str, ResourceToken]:
    """A token for the grant key's Agent with `scopes` (no more than the grant holds), valid
    for MCP_RESOURCE_TOKEN_SECONDS and never past `not_after` (the access token's expiry)."""
    now = timezone.now().replace(microsecond=0)
    expires_at = min(now + timedelta(seconds=settings.MCP_RESOURCE_TOKEN_SECONDS), not_after)
    token = ResourceToken(
        token_id=secrets.token_hex(8),
        connection_id=connection_id,
        key_lookup_id=grant_key.lookup_id,
        scopes=frozenset(scopes) & frozenset(grant_key.scopes),
        audience=audience,
        issued_at=now,
        expires_at=expires_at,
    )
    payload = {
        "t": token.token_id,
        "c": token.connection_id,
        "k": token.key_lookup_id,
        "s": sorted(token.scopes),
        "aud": token.audience,
        "i": int(token.issued_at.timestamp()),
        "e": int(token.expires_at.timestamp()),
    }
    return signed_token(prefix=RESOURCE_TOKEN_PREFIX, salt=_SALT, payload=payload), token


def resource_token_verify(
    *, raw_token: str, audience: str
) -> tuple[ResourceToken, ApiKey, CountedRequest | None]:
    """The token, its grant key and the request's count in the grant's rate window (taken with
    the key from the cache, see `api_key_by_lookup_id_counted`), or Unauthorized."""
    payload = signed_token_payload(raw=raw_token, prefix=RESOURCE_TOKEN_PREFIX, salt=_SALT)
    if payload is None:
        raise Unauthorized("The resource token is not valid.")
    try:
        token = ResourceToken(
            token_id=str(payload["t"]),
            connection_id=str(payload["c"]),
            key_lookup_id=str(payload["k"]),
            scopes=frozenset(str(scope) for scope in payload["s"]),
            audience=str(payload["aud"]),
            issued_at=datetime.fromtimestamp(int(payload["i"]), UTC),
            expires_at=datetime.fromtimestamp(int(payload["e"]), UTC),
        )
    except (ValueError, TypeError, KeyError, OverflowError):
        raise Unauthorized("The resource token is not valid.") from None
    if token.audience != audience:
        raise Unauthorized(f"The resource token was issued for {token.audience}, not this API.")
    if token.expires_at <= timezone.now():
        raise Unauthorized(
            f"The resource token expired at {iso(token.expires_at)}; the MCP server mints a "
            "new one for each request."
        )
    key, counted = api_key_by_lookup_id_counted(token.key_lookup_id)
    if key is None or key.kind != ApiKey.Kind.CONNECTED_APP:
        raise Unauthorized("The resource token is not valid.")
    api_key_usable_check(key, what="The connected application behind this token")
    return token, key, counted
