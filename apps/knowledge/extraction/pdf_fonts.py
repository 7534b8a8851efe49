"""Undo mojibake from simple TrueType fonts whose bytes are really GBK, Big5 or Shift-JIS.

Chinese and Japanese writers (old Office versions, some invoicing tools) draw CJK text with a
*simple* TrueType font (one byte per code), no ToUnicode map and no /Encoding, putting the
text's GBK, Big5 or Shift-JIS bytes in the strings. A reader can only map each byte through a
single-byte encoding, so "中文" comes out as "Ö\u2014..." mojibake.

Before pypdf reads a page, each such font of the page gets an encoding that maps every byte to
a distinct character (Windows-1252, the Western default, with its five unassigned codes kept as
Latin-1), so the bytes can be recovered exactly from the text. Each line drawn in such a font is
then decoded as a CJK encoding, and the result kept only when it is valid text made mostly of
CJK characters (an encoding that merely decodes is not enough: Shift-JIS bytes often decode as
rare GBK characters, and "Müller" as Shift-JIS). Otherwise the line stays as Windows-1252 text,
which is what Western writers of such fonts mean. The font's name picks the first encoding to
try (SimSun is GBK, MingLiU Big5, MS Mincho Shift-JIS); without a hint GBK is tried with the
common-character set GB2312 only, then Big5, then Shift-JIS. Fonts that name an /Encoding say
what their codes are and are left alone, as are fonts of form XObjects.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pypdf import PageObject
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject

_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"ming|kaiu|dfkai|big5|biau", re.IGNORECASE), "big5"),
    (re.compile(r"mincho|gothic|meiryo|osaka|hgs|sjis", re.IGNORECASE), "cp932"),
    (re.compile(r"sim|song|hei|kai|fang|gb", re.IGNORECASE), "gbk"),
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LATIN = re.compile(r"[A-Za-z]")
_BAD_CATEGORIES = {"Cc", "Cf", "Co", "Cn", "Cs"}
# Where the recoder keeps, in a font it prepared, the encodings to try.
_CANDIDATES = NameObject("/AgentConsoleCjkCandidates")


def _byte_characters() -> list[str]:
    characters = []
    for code in range(256):
        try:
            characters.append(bytes([code]).decode("cp1252"))
        except UnicodeDecodeError:
            characters.append(chr(code))
    return characters


_CHARACTERS = _byte_characters()
_BYTES = {character: code for code, character in enumerate(_CHARACTERS)}


class FontRecoder:
    """Per page: prepares suspect fonts, re-decodes their lines, remembers what to replace."""

    def __init__(self) -> None:
        self.replacements: dict[str, str] = {}

    def prepare(self, page: PageObject) -> None:
        try:
            resources: Any = page["/Resources"].get_object()
            fonts = resources["/Font"].get_object()
            for reference in fonts.values():
                font = reference.get_object()
                if _is_suspect(font):
                    _prepare(font)
        except (KeyError, AttributeError, TypeError, ValueError):
            return

    def recode(self, text: str, font: Any) -> str:
        if not text or text.isascii() or not isinstance(font, dict) or _CANDIDATES not in font:
            return text
        codecs = tuple(str(name)[1:] for name in font[_CANDIDATES])
        # pypdf ends a fragment with the line break it inferred; that is not the font's.
        return "\n".join(self._recode_line(line, codecs) for line in text.split("\n"))

    def apply(self, text: str) -> str:
        for mojibake in sorted(self.replacements, key=len, reverse=True):
            text = text.replace(mojibake, self.replacements[mojibake])
        return text

    def _recode_line(self, line: str, codecs: tuple[str, ...]) -> str:
        if line.isascii():
            return line
        try:
            raw = bytes(_BYTES[character] for character in line)
        except KeyError:
            return line
        decoded = _decode(raw, codecs)
        if decoded is None:
            return line
        self.replacements[line] = decoded
        return decoded


def _is_suspect(font: Any) -> bool:
    return (
        isinstance(font, dict)
        and font.get("/Subtype") == "/TrueType"
        and "/ToUnicode" not in font
        and "/Encoding" not in font
    )


def _prepare(font: DictionaryObject) -> None:
    differences = ArrayObject([NumberObject(0)])
    differences.extend(NameObject(f"/uni{ord(character):04X}") for character in _CHARACTERS)
    font[NameObject("/Encoding")] = DictionaryObject(
        {NameObject("/Type"): NameObject("/Encoding"), NameObject("/Differences"): differences}
    )
    name = str(font.get("/BaseFont") or "")
    hinted = [codec for pattern, codec in _HINTS if pattern.search(name)]
    codecs = dict.fromkeys([*hinted[:1], "gb2312", "big5", "cp932"])
    font[_CANDIDATES] = ArrayObject(NameObject(f"/{codec}") for codec in codecs)


def _decode(raw: bytes, codecs: tuple[str, ...]) -> str | None:
    for codec in codecs:
        try:
            text = raw.decode(codec)
        except (UnicodeDecodeError, LookupError):
            continue
        cjk = len(_CJK.findall(text))
        # Western text that happens to decode ("Müller" is valid Shift-JIS) has a stray CJK
        # character among many Latin letters; real CJK text is mostly CJK.
        if (
            cjk
            and cjk * 2 >= len(_LATIN.findall(text))
            and not any(unicodedata.category(character) in _BAD_CATEGORIES for character in text)
        ):
            return text
    return None
