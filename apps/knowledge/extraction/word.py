"""Word (.docx) with python-docx, walking the XML in body order.

python-docx gives us the package, its parts, styles and numbering; the text itself is read
from the XML so nothing is lost between its paragraph and table objects (content controls,
text boxes, hyperlinks, math, nested tables, tables in headers).

Mapping:

* headings: the ``Title`` style is ``#``, ``Heading N`` is ``#`` * (N + 1) (capped at 6), and
  so is a paragraph with an outline level N - 1 (localised heading styles have one);
* lists: paragraphs with numbering (``w:numPr``, on the paragraph or its style) become ``-``
  items, or ``1.`` items when the level's format is a number; levels nest by indentation;
* tables: a markdown table per table, first row as header. A merged cell shows its text in its
  first grid cell; the cells it covers are empty. A table inside a cell is written inline in
  that cell ("a, b; c, d");
* headers and footers of every section (default, first page, even pages), each part once:
  headers before the body, footers after it, each introduced by an HTML comment naming it;
* footnotes, endnotes and comments at the end. Deleted revisions and field codes are left out.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

import docx
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.part import Part
from lxml import etree

from .markdown import (
    clean_text,
    escape_inline,
    escape_text,
    join_blocks,
    markdown_list,
    markdown_table,
)
from .ooxml import check_package
from .result import Extraction

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
M = "http://schemas.openxmlformats.org/officeDocument/2006/math"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"


def w(tag: str) -> str:
    return f"{{{W}}}{tag}"


# Containers whose children belong to the surrounding flow (content controls, custom XML,
# tracked insertions, smart tags, simple fields).
_TRANSPARENT = {w("sdt"), w("sdtContent"), w("customXml"), w("ins"), w("moveTo"), w("smartTag")}
_TRANSPARENT |= {w("fldSimple"), w("dir"), w("bdo")}
_SKIPPED = {w("del"), w("moveFrom"), w("sdtPr"), w("sdtEndPr"), w("pPr"), w("rPr"), w("tcPr")}
_SKIPPED |= {w("trPr"), w("tblPr"), w("tblGrid"), f"{{{MC}}}Fallback"}
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_SAFE_LINK = re.compile(r"^(https?|mailto):", re.IGNORECASE)
_ORDERED_FORMATS = {"decimal", "decimalZero", "upperRoman", "lowerRoman", "upperLetter"}
_ORDERED_FORMATS |= {"lowerLetter", "ordinal", "cardinalText", "ordinalText"}
_NOTE_SEPARATORS = {"separator", "continuationSeparator", "continuationNotice"}
_PART_LABELS = {"default": "", "first": " (first page)", "even": " (even pages)"}
_SAFE_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def extract_docx(data: bytes) -> Extraction:
    data = check_package(data)
    document = docx.Document(io.BytesIO(data))
    context = _Context.build(document)
    body = document.element.body

    headers, footers = _headers_and_footers(document, context)
    blocks = [*headers, *_render_blocks(body, context, document.part)]
    blocks += footers
    blocks += _notes(document.part, RT.FOOTNOTES, "footnote", "footnotes", context)
    blocks += _notes(document.part, RT.ENDNOTES, "endnote", "endnotes", context)
    blocks += _comments(document.part, context)

    title = (document.core_properties.title or "").strip() or context.first_heading
    return Extraction(markdown=join_blocks(blocks) + "\n", page_count=None, title=title or None)


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


# --- blocks --------------------------------------------------------------------------------


@dataclass
class _ListItem:
    depth_key: int
    marker: str
    text: str


def _render_blocks(container: etree._Element, context: _Context, part: Part) -> list[str]:
    """Markdown blocks for the paragraphs and tables of a body, cell, header or note."""
    blocks: list[str] = []
    items: list[_ListItem] = []

    def flush_list() -> None:
        if items:
            blocks.append(markdown_list((i.depth_key, i.marker, i.text) for i in items))
            items.clear()

    for element in _block_elements(container):
        if element.tag == w("tbl"):
            flush_list()
            blocks.append(markdown_table(_table_rows(element, context, part)))
            continue
        text, boxes = _paragraph_text(element, context, part)
        listed = context.list_info(element)
        level = context.heading_level(element)
        if text.strip() and level is not None and listed is None:
            flush_list()
            heading = " ".join(text.split())
            context.first_heading = context.first_heading or heading
            blocks.append("#" * level + " " + escape_inline(heading))
        elif text.strip() and listed is not None:
            num_id, ilvl = listed
            items.append(_ListItem(ilvl, context.marker(num_id, ilvl), " ".join(text.split())))
        elif text.strip():
            flush_list()
            blocks.append(escape_text(text.strip()))
        for box in boxes:
            flush_list()
            blocks.extend(_render_blocks(box, context, part))
    flush_list()
    return blocks


def _block_elements(container: etree._Element) -> Iterator[etree._Element]:
    for child in container:
        if child.tag in (w("p"), w("tbl")):
            yield child
        elif child.tag in _TRANSPARENT:
            yield from _block_elements(child)


def _paragraph_text(
    paragraph: etree._Element, context: _Context, part: Part
) -> tuple[str, list[etree._Element]]:
    """The paragraph's text, and the text boxes found in it (rendered as blocks after it)."""
    pieces: list[str] = []
    boxes: list[etree._Element] = []
    _collect_inline(paragraph, pieces, boxes, part)
    return clean_text("".join(pieces)), boxes


def _collect_inline(
    element: etree._Element, pieces: list[str], boxes: list[etree._Element], part: Part
) -> None:
    for child in element:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIPPED:
            continue
        if tag == w("t") or tag == f"{{{M}}}t":
            pieces.append(child.text or "")
        elif tag == w("tab"):
            pieces.append(" ")
        elif tag in (w("br"), w("cr")):
            pieces.append("\n")
        elif tag == w("noBreakHyphen"):
            pieces.append("-")
        elif tag == w("txbxContent"):
            boxes.append(child)
        elif tag == w("hyperlink"):
            inner: list[str] = []
            _collect_inline(child, inner, boxes, part)
            pieces.append(_link("".join(inner), child.get(f"{{{R}}}id"), part))
        elif tag == w("footnoteReference"):
            pieces.append(f"[^{child.get(w('id'))}]")
        elif tag == w("endnoteReference"):
            pieces.append(f"[^e{child.get(w('id'))}]")
        elif tag == f"{{{WP}}}docPr":
            description = (child.get("descr") or "").strip()
            if description:
                pieces.append(f" [Image: {' '.join(description.split())}] ")
        else:
            _collect_inline(child, pieces, boxes, part)


def _link(text: str, relationship_id: str | None, part: Part) -> str:
    if not text.strip() or not relationship_id:
        return text
    relationship = part.rels.get(relationship_id)
    if relationship is None or not relationship.is_external:
        return text
    url = relationship.target_ref
    if not _SAFE_LINK.match(url):
        return text
    # Characters that would end the link or open a tag are percent-encoded.
    return f"[{text.replace('[', '(').replace(']', ')')}]({quote(url, safe=':/?#@!$&*+,;=%~.-_')})"


def _table_rows(table: etree._Element, context: _Context, part: Part) -> list[list[str]]:
    rows = []
    for row in _children(table, w("tr")):
        cells: list[str] = []
        trpr = row.find(w("trPr"))
        if trpr is not None:
            cells.extend([""] * min(_int(trpr.find(w("gridBefore"))) or 0, 64))
        for cell in _children(row, w("tc")):
            tcpr = cell.find(w("tcPr"))
            span, continued = 1, False
            if tcpr is not None:
                span = max(1, min(_int(tcpr.find(w("gridSpan"))) or 1, 64))
                vmerge = tcpr.find(w("vMerge"))
                continued = vmerge is not None and _val(vmerge) != "restart"
            cells.append("" if continued else _cell_text(cell, context, part))
            cells.extend([""] * (span - 1))
        rows.append(cells)
    return rows


def _children(element: etree._Element, tag: str) -> Iterator[etree._Element]:
    for child in element:
        if child.tag == tag:
            yield child
        elif child.tag in _TRANSPARENT:
            yield from _children(child, tag)


def _cell_text(cell: etree._Element, context: _Context, part: Part) -> str:
    pieces = []
    for element in _block_elements(cell):
        if element.tag == w("tbl"):
            # Markdown tables cannot nest: write the inner table inline.
            inner = _table_rows(element, context, part)
            pieces.append("; ".join(", ".join(c for c in row if c) for row in inner if any(row)))
        else:
            text, boxes = _paragraph_text(element, context, part)
            pieces.append(text)
            pieces.extend(_cell_text(box, context, part) for box in boxes)
    return " ".join(" ".join(piece.split()) for piece in pieces if piece.strip())


# --- headers, footers, notes, comments ------------------------------------------------------


def _headers_and_footers(
    document: docx.document.Document, context: _Context
) -> tuple[list[str], list[str]]:
    headers: list[str] = []
    footers: list[str] = []
    seen_parts: set[str] = set()
    seen_text: set[str] = set()
    for sect_pr in document.element.body.iter(w("sectPr")):
        for reference in sect_pr:
            if reference.tag not in (w("headerReference"), w("footerReference")):
                continue
            rel_id = reference.get(f"{{{R}}}id")
            related = document.part.rels.get(rel_id) if rel_id else None
            if related is None or related.is_external:
                continue
            target = related.target_part
            if str(target.partname) in seen_parts:
                continue
            seen_parts.add(str(target.partname))
            element = _part_element(target)
            if element is None:
                continue
            rendered = join_blocks(_render_blocks(element, context, target))
            if not rendered or rendered in seen_text:
                continue
            seen_text.add(rendered)
            is_header = reference.tag == w("headerReference")
            label = ("header" if is_header else "footer") + _PART_LABELS.get(
                reference.get(w("type"), "default"), ""
            )
            (headers if is_header else footers).append(f"<!-- {label} -->\n{rendered}")
    return headers, footers


def _notes(part: Part, reltype: str, tag: str, label: str, context: _Context) -> list[str]:
    blocks = []
    prefix = "e" if tag == "endnote" else ""
    for target in _related_parts(part, reltype):
        element = _part_element(target)
        if element is None:
            continue
        for note in element.iter(w(tag)):
            if note.get(w("type")) in _NOTE_SEPARATORS:
                continue
            text = " ".join(join_blocks(_render_blocks(note, context, target)).split())
            if text:
                blocks.append(f"[^{prefix}{note.get(w('id'))}]: {text}")
    return [f"<!-- {label} -->\n" + "\n".join(blocks)] if blocks else []


def _comments(part: Part, context: _Context) -> list[str]:
    lines = []
    for target in _related_parts(part, RT.COMMENTS):
        element = _part_element(target)
        if element is None:
            continue
        for comment in element.iter(w("comment")):
            text = " ".join(join_blocks(_render_blocks(comment, context, target)).split())
            if text:
                author = " ".join((comment.get(w("author")) or "").split())
                lines.append(f"> {escape_inline(author)}: {text}" if author else f"> {text}")
    return ["<!-- comments -->\n" + "\n>\n".join(lines)] if lines else []


def _related_parts(part: Part, reltype: str) -> Iterator[Part]:
    for relationship in part.rels.values():
        if relationship.reltype == reltype and not relationship.is_external:
            yield relationship.target_part


def _part_element(part: Part) -> etree._Element | None:
    element = getattr(part, "element", None)
    if element is not None:
        return element
    try:
        return etree.fromstring(part.blob, _SAFE_PARSER)
    except etree.XMLSyntaxError:
        return None
