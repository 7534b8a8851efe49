from typing_extensions import Buffer

def compact_json(data: Buffer, /) -> tuple[bytes, int] | None:
    """The JSON text without whitespace outside strings, the escapes of visible characters
    decoded, and the number of whitespace bytes dropped; None if a string is not UTF-8
    (_json.c)."""
