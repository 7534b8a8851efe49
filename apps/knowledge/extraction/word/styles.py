"""WordprocessingML names, and what a paragraph's styles and numbering say: its heading level,
whether it is a list item, and its list marker (numbering restarted per level)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import docx
from lxml import etree

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
M = "http://schemas.openxmlformats.org/officeDocument/2006/math"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"


def w(tag: str) -> str:
    return f"{{{W}}}{tag}"


_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


_ORDERED_FORMATS = {"decimal", "decimalZero", "upperRoman", "lowerRoman", "upperLetter"}
_ORDERED_FORMATS |= {"lowerLetter", "ordinal", "cardinalText", "ordinalText"}


@dataclass
class _Style:
    name: str = ""
    based_on: str | None = None
    outline_level: int | None = None
    num_id: str | None = None
    ilvl: int = 0


@dataclass
class _Context:
    styles: dict[str, _Style] = field(default_factory=dict)
    # numId -> ilvl -> (numFmt, start)
    numbering: dict[str, dict[int, tuple[str, int]]] = field(default_factory=dict)
    counters: dict[tuple[str, int], int] = field(default_factory=dict)
    first_heading: str | None = None

    @classmethod
    def build(cls, document: docx.document.Document) -> _Context:
        context = cls()
        styles_element = document.styles.element
        for style in styles_element.iter(w("style")):
            style_id = style.get(w("styleId"))
            if not style_id:
                continue
            info = _Style()
            name = style.find(w("name"))
            info.name = (name.get(w("val")) or "") if name is not None else ""
            based_on = style.find(w("basedOn"))
            info.based_on = based_on.get(w("val")) if based_on is not None else None
            ppr = style.find(w("pPr"))
            if ppr is not None:
                info.outline_level = _int(ppr.find(w("outlineLvl")))
                info.num_id, info.ilvl = _num_pr(ppr)
            context.styles[style_id] = info
        context.numbering = _numbering(document)
        return context

    def style_chain(self, style_id: str | None) -> Iterator[_Style]:
        seen: set[str] = set()
        while style_id and style_id in self.styles and style_id not in seen:
            seen.add(style_id)
            style = self.styles[style_id]
            yield style
            style_id = style.based_on

    def heading_level(self, paragraph: etree._Element) -> int | None:
        ppr = paragraph.find(w("pPr"))
        style_id = _val(ppr.find(w("pStyle"))) if ppr is not None else None
        for style in self.style_chain(style_id):
            name = style.name.strip().lower()
            if name == "title":
                return 1
            match = _HEADING_NAME.match(name)
            if match:
                return min(int(match.group(1)) + 1, 6)
            if style.outline_level is not None and style.outline_level < 9:
                return min(style.outline_level + 2, 6)
        own_level = _int(ppr.find(w("outlineLvl"))) if ppr is not None else None
        if own_level is not None and own_level < 9:
            return min(own_level + 2, 6)
        return None

    def list_info(self, paragraph: etree._Element) -> tuple[str, int] | None:
        """(numId, level) when the paragraph is a numbered or bulleted list item."""
        ppr = paragraph.find(w("pPr"))
        if ppr is None:
            return None
        num_id, ilvl = _num_pr(ppr)
        if num_id is None:
            style_id = _val(ppr.find(w("pStyle")))
            for style in self.style_chain(style_id):
                if style.num_id is not None:
                    num_id, ilvl = style.num_id, style.ilvl
                    break
        if num_id is None or num_id == "0" or num_id not in self.numbering:
            return None
        return num_id, ilvl

    def marker(self, num_id: str, ilvl: int) -> str:
        fmt, start = self.numbering[num_id].get(ilvl, ("bullet", 1))
        # A new item at this level restarts the numbering of the levels below it.
        for key in [k for k in self.counters if k[0] == num_id and k[1] > ilvl]:
            del self.counters[key]
        if fmt not in _ORDERED_FORMATS:
            return "-"
        count = self.counters.get((num_id, ilvl), start - 1) + 1
        self.counters[(num_id, ilvl)] = count
        return f"{count}."


def _numbering(document: docx.document.Document) -> dict[str, dict[int, tuple[str, int]]]:
    try:
        numbering = document.part.numbering_part.element
    except (KeyError, NotImplementedError):
        return {}
    abstract: dict[str, dict[int, tuple[str, int]]] = {}
    for element in numbering.iter(w("abstractNum")):
        levels = {}
        for level in element.iter(w("lvl")):
            ilvl = int(level.get(w("ilvl"), "0") or 0)
            fmt = _val(level.find(w("numFmt"))) or "bullet"
            levels[ilvl] = (fmt, _int(level.find(w("start"))) or 1)
        abstract[element.get(w("abstractNumId"), "")] = levels
    result = {}
    for num in numbering.iter(w("num")):
        abstract_id = _val(num.find(w("abstractNumId")))
        result[num.get(w("numId"), "")] = abstract.get(abstract_id or "", {})
    return result


def _num_pr(ppr: etree._Element) -> tuple[str | None, int]:
    num_pr = ppr.find(w("numPr"))
    if num_pr is None:
        return None, 0
    return _val(num_pr.find(w("numId"))), _int(num_pr.find(w("ilvl"))) or 0


def _val(element: etree._Element | None) -> str | None:
    return None if element is None else element.get(w("val"))


def _int(element: etree._Element | None) -> int | None:
    value = _val(element)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
