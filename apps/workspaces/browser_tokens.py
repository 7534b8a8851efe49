"""Browser tokens: short-lived, signed credentials bound to one Agent and one end user.

A token is `abt_` followed by a `django.core.signing` value (HMAC-SHA256 under SECRET_KEY with
a dedicated salt) of a small JSON payload: token id, Agent id, end-user id, the minting key's
lookup id, issued-at and expiry. Verifying one reads no database: the signature and expiry are
checked from the token itself, and the minting key (is it revoked, expired, its Agent
archived?) comes from the shared key cache that API keys use; only a cache miss reads the key
row once. So revoking the minting key invalidates every token it minted at once.
"""

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from apps.api.throttling import CountedRequest
from apps.common.errors import Unauthorized
from apps.common.signed_tokens import signed_token, signed_token_payload
from apps.common.time import iso
from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_by_lookup_id_counted, api_key_usable_check

BROWSER_TOKEN_PREFIX = "abt"
_SALT = "apps.workspaces.browser-token.v1"
DEFAULT_LIFETIME_SECONDS = 3600
MAX_LIFETIME_SECONDS = 24 * 3600
MIN_LIFETIME_SECONDS = 60


@dataclass(frozen=True)
class BrowserToken:
    token_id: str
    agent_id: str
    user_id: str
    key_lookup_id: str
    issued_at: datetime
    expires_at: datetime

    @property
    def public_id(self) -> str:
        """Safe to log and to count requests by: it grants nothing without the signature."""
        return f"{BROWSER_TOKEN_PREFIX}_{self.token_id}"


def browser_token_sign(
    *, key: ApiKey, user_id: str, lifetime_seconds: int
) -> tuple[str, BrowserToken]:
    """A token for `user_id` of the key's Agent. It never outlives the key's own expiry."""
    now = timezone.now().replace(microsecond=0)
    expires_at = now + timedelta(seconds=lifetime_seconds)
    if key.expires_at is not None:
        expires_at = min(expires_at, key.expires_at)
    token = BrowserToken(
        token_id=secrets.token_hex(8),
        agent_id=key.agent_id,
        user_id=user_id,
        key_lookup_id=key.lookup_id,
        issued_at=now,
        expires_at=expires_at,
    )
    payload = {
        "t": token.token_id,
        "a": token.agent_id,
        "u": token.user_id,
        "k": token.key_lookup_id,
        "i": int(token.issued_at.timestamp()),
        "e": int(token.expires_at.timestamp()),
    }
    return signed_token(prefix=BROWSER_TOKEN_PREFIX, salt=_SALT, payload=payload), token


def is_browser_token(raw: str) -> bool:
    return raw.startswith(f"{BROWSER_TOKEN_PREFIX}_")


def browser_token_verify(*, raw_token: str) -> tuple[BrowserToken, ApiKey, CountedRequest | None]:
    """The token, its minting key and the request's count in the token's rate window (taken
    with the key from the cache, see `api_key_by_lookup_id_counted`), or Unauthorized."""
    payload = signed_token_payload(raw=raw_token, prefix=BROWSER_TOKEN_PREFIX, salt=_SALT)
    if payload is None:
        raise Unauthorized("The browser token is not valid.")
    try:
        token = BrowserToken(
            token_id=str(payload["t"]),
            agent_id=str(payload["a"]),
            user_id=str(payload["u"]),
            key_lookup_id=str(payload["k"]),
            issued_at=datetime.fromtimestamp(int(payload["i"]), UTC),
            expires_at=datetime.fromtimestamp(int(payload["e"]), UTC),
        )
    except (ValueError, TypeError, KeyError, OverflowError):
        raise Unauthorized("The browser token is not valid.") from None
    if token.expires_at <= timezone.now():
        raise Unauthorized(
            f"The browser token expired at {iso(token.expires_at)}; ask your server for a new one."
        )
    key, counted = api_key_by_lookup_id_counted(token.key_lookup_id, window_name=token.public_id)
    if key is None or key.agent_id != token.agent_id:
        raise Unauthorized("The browser token is not valid.")
    api_key_usable_check(key, what="The API key that minted this browser token")
    return token, key, counted
