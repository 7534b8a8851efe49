"""A Word document as markdown: headers, body, footers, notes and comments in that order, and
its title (the core properties', else its first heading)."""

from __future__ import annotations

import io

import docx
from docx.opc.constants import RELATIONSHIP_TYPE as RT

from ..markdown import join_blocks
from ..ooxml import check_package
from ..result import Extraction
from .blocks import _render_blocks
from .parts import _comments, _headers_and_footers, _notes
from .styles import _Context


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
