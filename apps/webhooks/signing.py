"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

Headers: `webhook-id` (the delivery id, stable across retries, for de-duplication),
`webhook-timestamp` (unix seconds of this attempt) and `webhook-signature`:
`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the base64-decoded part of the
secret after `whsec_`. Several space-separated signatures are sent while a rotated-out secret is
still in its grace period, so a receiver holding either secret verifies.
"""

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(
    *, secrets_in_use: list[str], msg_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(secret=secret, msg_id=msg_id, timestamp=timestamp, body=body)
            for secret in secrets_in_use
        ),
    }
