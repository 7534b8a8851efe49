"""Encryption at rest of tool-server auth headers (Fernet: AES-128-CBC with HMAC-SHA256).

The key is derived with HKDF from `TOOLS_ENCRYPTION_KEY`, or from `SECRET_KEY` when that is
empty, so a database dump alone does not reveal the headers. Values are decrypted only in the
worker, just before a discovery connects; they are never returned, rendered or logged.
"""

from __future__ import annotations

import base64
import json

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

_INFO = b"agent-console tools: mcp server auth headers v1"


class UnreadableSecret(Exception):
    """Stored headers that the current key cannot decrypt (the key changed)."""


def _fernet() -> Fernet:
    material = (settings.TOOLS_ENCRYPTION_KEY or settings.SECRET_KEY).encode("utf-8")
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(material)
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt_headers(headers: dict[str, str]) -> str:
    if not headers:
        return ""
    return _fernet().encrypt(json.dumps(headers).encode("utf-8")).decode("ascii")


def decrypt_headers(token: str) -> dict[str, str]:
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode("ascii")))
    except (InvalidToken, ValueError):
        raise UnreadableSecret(
            "The stored auth headers cannot be decrypted (the encryption key changed); "
            "enter them again."
        ) from None
