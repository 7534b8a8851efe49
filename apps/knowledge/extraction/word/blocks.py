"""The flow of a body, cell, header or note as markdown blocks: headings, paragraphs and list
items, tables (merged cells, nested tables inline), runs with links, note references, images'
descriptions and text boxes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

from docx.opc.part import Part
from lxml import etree

from ..markdown import clean_text, escape_inline, escape_text, markdown_list, markdown_table
from .styles import MC, WP, M, R, _Context, _int, _val, w

# Containers whose children belong to the surrounding flow (content controls, custom XML,
# tracked insertions, smart tags, simple fields).
_TRANSPARENT = {w("sdt"), w("sdtContent"), w("customXml"), w("ins"), w("moveTo"), w("smartTag")}
_TRANSPARENT |= {w("fldSimple"), w("dir"), w("bdo")}
_SKIPPED = {w("del"), w("moveFrom"), w("sdtPr"), w("sdtEndPr"), w("pPr"), w("rPr"), w("tcPr")}
_SKIPPED |= {w("trPr"), w("tblPr"), w("tblGrid"), f"{{{MC}}}Fallback"}


_SAFE_LINK = re.compile(r"^(https?|mailto):", re.IGNORECASE)


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
