from typing_extensions import Buffer

def compact_json(data: Buffer, /) -> tuple[bytes, int]:
    """The JSON text without whitespace outside strings, the escapes of visible characters
    decoded, and the number of whitespace bytes dropped (_json.c)."""
