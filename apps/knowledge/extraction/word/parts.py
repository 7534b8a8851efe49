"""The parts around the body: headers and footers of every section (each part once), footnotes,
endnotes and comments, each introduced by an HTML comment naming it."""

from __future__ import annotations

from collections.abc import Iterator

import docx
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.part import Part
from lxml import etree

from ..markdown import escape_inline, join_blocks
from .blocks import _render_blocks
from .styles import R, _Context, w

_NOTE_SEPARATORS = {"separator", "continuationSeparator", "continuationNotice"}
_PART_LABELS = {"default": "", "first": " (first page)", "even": " (even pages)"}
_SAFE_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


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
