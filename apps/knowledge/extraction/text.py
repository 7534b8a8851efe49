"""Plain text and Markdown, and the text decoding every text kind shares.

Decoding: a byte-order mark wins; then strict UTF-8 (most files); then charset-normalizer's
best guess (Shift-JIS, cp1252, ...). Bytes that decode only into control characters are binary.
The text is then passed through as it is, with the BOM stripped, newlines normalised to ``\\n``
and control characters other than tab removed. Markdown stays markdown; plain text is markdown
already (its line structure may turn into paragraphs when rendered, which is fine for reading and
search).
"""

from __future__ import annotations

import codecs
import re

import charset_normalizer

from .chunking import heading_title
from .result import Extraction

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+)$", re.MULTILINE)
# More than this share of control characters and it is not text.
_MAX_CONTROL_SHARE = 0.01


def looks_binary(sample: bytes) -> bool:
    """Cheap test on a prefix: NUL bytes (outside UTF-16/32) or many control bytes."""
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte < 9 or 13 < byte < 32)
    return controls > len(sample) * 0.05


def decode_text(data: bytes) -> str | None:
    """Decode bytes that are text; None when they are not."""
    text = _decode(data)
    if text is None:
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    controls = len(_CONTROL.findall(text[:100_000]))
    if controls > max(1, len(text[:100_000]) * _MAX_CONTROL_SHARE):
        return None
    return text


def _decode(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(encoding)
            except UnicodeDecodeError:
                return None
    if b"\x00" in data[:4096]:
        return _decode_utf16_without_bom(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        return None
    return str(best)


def _decode_utf16_without_bom(data: bytes) -> str | None:
    # Mostly-ASCII UTF-16 has a NUL in every other byte; anything else with NULs is binary.
    sample = data[:4096]
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > len(odd) * 0.4:
        encoding = "utf-16-le"
    elif even.count(0) > len(even) * 0.4:
        encoding = "utf-16-be"
    else:
        return None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def normalize_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text).replace("\x0c", "\n")


def decode_or_fail(data: bytes) -> str:
    from .errors import ExtractionFailed

    text = decode_text(data)
    if text is None:
        raise ExtractionFailed("The file is not readable text.")
    return normalize_text(text)


def extract_text(data: bytes) -> Extraction:
    text = decode_or_fail(data).strip("\n")
    return Extraction(markdown=text + "\n" if text else "", page_count=None, title=None)


def extract_markdown(data: bytes) -> Extraction:
    text = decode_or_fail(data).strip("\n")
    match = _ATX_HEADING.search(_without_code(text))
    title = heading_title(match.group(1))[:300] or None if match else None
    return Extraction(markdown=text + "\n" if text else "", page_count=None, title=title)


def _without_code(text: str) -> str:
    # A "# comment" inside a fenced bash block is not the title.
    return re.sub(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", "", text, flags=re.MULTILINE | re.DOTALL)
