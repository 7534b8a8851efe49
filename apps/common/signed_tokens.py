"""Stateless bearer tokens: `<prefix>_` followed by a `django.core.signing` value (HMAC-SHA256
under SECRET_KEY, one salt per kind of token) of a small JSON payload. Browser tokens and the
MCP server's resource tokens are made and read here; what the payload means is theirs."""

from django.core import signing


def signed_token(*, prefix: str, salt: str, payload: dict) -> str:
    return f"{prefix}_{signing.Signer(salt=salt).sign_object(payload)}"


def signed_token_payload(*, raw: str, prefix: str, salt: str) -> dict | None:
    """The payload, or None when the token is not one of ours of this kind (wrong prefix, bad
    signature, not JSON)."""
    if not raw.startswith(f"{prefix}_"):
        return None
    try:
        payload = signing.Signer(salt=salt).unsign_object(raw[len(prefix) + 1 :])
    except (signing.BadSignature, ValueError, TypeError):
        return None
    return payload if isinstance(payload, dict) else None
