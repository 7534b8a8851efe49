"""Undo mojibake from simple TrueType fonts whose bytes are really GBK, Big5 or Shift-JIS.

Chinese and Japanese writers (old Office versions, some invoicing tools) draw CJK text with a
*simple* TrueType font (one byte per code) and no ToUnicode map, putting the text's GBK, Big5
or Shift-JIS bytes in the strings. A reader can only map each byte through a single-byte
encoding, so "中文" comes out as "Ö\u2014..." mojibake.

For text drawn in such a font we map pypdf's characters back to the bytes through the font's
own single-byte encoding, and decode those bytes as a CJK encoding, keeping the result only
when it is valid text made of CJK characters (an encoding that merely decodes is not enough:
Shift-JIS bytes often decode as rare GBK characters). The font's name picks the first encoding
to try (SimSun is GBK, MingLiU Big5, MS Mincho Shift-JIS); without a hint GBK is tried with
the common-character set GB2312 only, then Big5, then Shift-JIS.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"ming|kaiu|dfkai|big5|biau", re.IGNORECASE), "big5"),
    (re.compile(r"mincho|gothic|meiryo|osaka|hgs|sjis|yu", re.IGNORECASE), "cp932"),
    (re.compile(r"sim|song|hei|kai|fang|gb", re.IGNORECASE), "gbk"),
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_BAD_CATEGORIES = {"Cc", "Cf", "Co", "Cn", "Cs"}


class FontRecoder:
    """Per page: re-decodes text of suspect fonts and remembers what to replace."""

    def __init__(self) -> None:
        self.replacements: dict[str, str] = {}
        self._reverse_maps: dict[int, tuple[dict[str, int], tuple[str, ...]] | None] = {}

    def recode(self, text: str, font: Any) -> str:
        if not text or text.isascii() or font is None:
            return text
        plan = self._plan(font)
        if plan is None:
            return text
        reverse, codecs = plan
        try:
            raw = bytes(reverse[char] for char in text)
        except (KeyError, ValueError):
            return text
        decoded = _decode(raw, codecs)
        if decoded is None:
            return text
        self.replacements[text] = decoded
        return decoded

    def apply(self, text: str) -> str:
        for mojibake in sorted(self.replacements, key=len, reverse=True):
            text = text.replace(mojibake, self.replacements[mojibake])
        return text

    def _plan(self, font: Any) -> tuple[dict[str, int], tuple[str, ...]] | None:
        key = id(font)
        if key not in self._reverse_maps:
            self._reverse_maps[key] = _plan_for(font)
        return self._reverse_maps[key]


def _plan_for(font: Any) -> tuple[dict[str, int], tuple[str, ...]] | None:
    """The reverse byte map and the encodings to try, or None for a font to leave alone."""
    try:
        if font.get("/Subtype") != "/TrueType" or "/ToUnicode" in font:
            return None
        encoding = font.get("/Encoding")
        if encoding is not None and hasattr(encoding, "get_object"):
            encoding = encoding.get_object()
        if isinstance(encoding, dict) and "/Differences" in encoding:
            return None  # glyph names given: the font says what its codes are
        from pypdf._cmap import get_encoding

        byte_map, _ = get_encoding(font)
    except Exception:
        return None
    if not isinstance(byte_map, dict):
        return None
    reverse: dict[str, int] = {}
    for code, char in byte_map.items():
        if isinstance(code, int) and isinstance(char, str) and 0 <= code < 256:
            reverse.setdefault(char, code)
    name = str(font.get("/BaseFont") or "")
    hinted = [codec for pattern, codec in _HINTS if pattern.search(name)]
    codecs = tuple(dict.fromkeys([*hinted[:1], "gb2312", "big5", "cp932"]))
    return reverse, codecs


def _decode(raw: bytes, codecs: tuple[str, ...]) -> str | None:
    if raw.isascii():
        return None
    for codec in codecs:
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue
        if _CJK.search(text) and not any(
            unicodedata.category(char) in _BAD_CATEGORIES for char in text
        ):
            return text
    return None
