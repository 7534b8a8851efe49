from typing_extensions import Buffer

def compact_json(data: Buffer, /) -> tuple[bytes, int] | None:
    """The JSON text without whitespace outside strings, the escapes of visible characters
    decoded, and the number of whitespace bytes dropped; None if a string is not UTF-8
    (_json.c)."""

def split_json(data: Buffer, /) -> dict[str, memoryview] | list[memoryview] | None:
    """The members of a compact, valid JSON object or array as slices of ``data``; None if it
    is neither or a key has an escape (_json.c)."""
