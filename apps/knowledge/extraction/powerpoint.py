"""PowerPoint (.pptx) with python-pptx.

One ``## Slide N: <title>`` section per slide (``## Slide N`` when it has no title), then its
shapes from top to bottom, left to right:

* text: paragraphs of body placeholders and indented paragraphs are list items nested by
  their outline level; other text boxes are paragraphs;
* tables as markdown tables (merged cells: text in the first cell, covered cells empty);
* group shapes, recursively, in the same order;
* charts: the chart title, then a table of categories by series values (that data lives only in
  the chart part, so text-only extractors miss it);
* pictures: their alt text (``descr``), as ``[Image: ...]``;
* speaker notes last, under ``### Notes``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

from pptx import Presentation
from pptx.chart.chart import Chart
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.shapes.base import BaseShape
from pptx.shapes.group import GroupShape
from pptx.shapes.picture import Picture
from pptx.slide import Slide
from pptx.table import Table
from pptx.text.text import _Paragraph

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

# Placeholders whose paragraphs are bullets by default.
_BULLET_PLACEHOLDERS = {PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT}
_MAX_GROUP_DEPTH = 20


def extract_pptx(data: bytes) -> Extraction:
    data = check_package(data)
    presentation = Presentation(io.BytesIO(data))
    sections = []
    first_title: str | None = None
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        title = _one_line(title_shape.text_frame.text) if title_shape is not None else ""
        first_title = first_title or title
        heading = f"## Slide {number}: {escape_inline(title)}" if title else f"## Slide {number}"
        blocks = _shapes_blocks(slide.shapes, skip=title_shape, depth=0)
        notes = _notes(slide)
        if notes:
            blocks.append("### Notes\n\n" + notes)
        sections.append(join_blocks([heading, *blocks]))
    document_title = (presentation.core_properties.title or "").strip() or first_title or None
    return Extraction(
        markdown=join_blocks(sections) + "\n", page_count=len(sections), title=document_title
    )


def _one_line(text: str) -> str:
    return " ".join(clean_text(text).split())


def _ordered(shapes: Iterable[BaseShape]) -> list[BaseShape]:
    # Reading order: top to bottom, then left to right (XML order is z-order, not reading).
    return sorted(shapes, key=lambda shape: (shape.top or 0, shape.left or 0))


def _shapes_blocks(shapes: Iterable[BaseShape], *, skip: BaseShape | None, depth: int) -> list[str]:
    blocks: list[str] = []
    for shape in _ordered(shapes):
        if skip is not None and shape.shape_id == skip.shape_id:
            continue
        blocks.extend(_shape_blocks(shape, depth))
    return blocks


def _shape_blocks(shape: BaseShape, depth: int) -> list[str]:
    if isinstance(shape, GroupShape) or shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        if depth >= _MAX_GROUP_DEPTH:
            return []
        return _shapes_blocks(shape.shapes, skip=None, depth=depth + 1)  # type: ignore[attr-defined]
    blocks: list[str] = []
    if getattr(shape, "has_table", False):
        blocks.append(markdown_table(_table_rows(shape.table)))  # type: ignore[attr-defined]
    if getattr(shape, "has_chart", False):
        blocks.extend(_chart_blocks(shape.chart))  # type: ignore[attr-defined]
    if isinstance(shape, Picture):
        description = _one_line(shape._element._nvXxPr.cNvPr.get("descr") or "")
        if description:
            blocks.append(escape_text(f"[Image: {description}]"))
    if getattr(shape, "has_text_frame", False):
        blocks.extend(_text_frame_blocks(shape))
    return blocks


def _text_frame_blocks(shape: BaseShape) -> list[str]:
    bulleted = False
    if shape.is_placeholder:
        bulleted = shape.placeholder_format.type in _BULLET_PLACEHOLDERS  # type: ignore[attr-defined]
    blocks: list[str] = []
    items: list[tuple[int, str, str]] = []
    for paragraph in shape.text_frame.paragraphs:  # type: ignore[attr-defined]
        text = clean_text(paragraph.text).replace("\x0b", "\n").strip()
        if not text:
            continue
        if bulleted or paragraph.level > 0 or _has_bullet(paragraph):
            items.append((paragraph.level, "-", text))
            continue
        if items:
            blocks.append(markdown_list(items))
            items = []
        blocks.append(escape_text(text))
    if items:
        blocks.append(markdown_list(items))
    return blocks


def _has_bullet(paragraph: _Paragraph) -> bool:
    ppr = paragraph._p.pPr
    if ppr is None:
        return False
    return any(child.tag.endswith(("}buChar", "}buAutoNum")) for child in ppr)


def _table_rows(table: Table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells = []
        for cell in row.cells:
            cells.append("" if cell.is_spanned else _one_line(cell.text))
        rows.append(cells)
    return rows


def _chart_blocks(chart: Chart) -> list[str]:
    blocks = []
    if chart.has_title and chart.chart_title.has_text_frame:
        title = _one_line(chart.chart_title.text_frame.text)
        if title:
            blocks.append(escape_text(f"Chart: {title}"))
    try:
        plot = chart.plots[0]
        categories = [str(category) for category in plot.categories]
        series = list(plot.series)
    except (IndexError, KeyError, ValueError, AttributeError):
        return blocks
    if series:
        header = ["", *(_one_line(str(s.name or "")) for s in series)]
        values = [list(s.values) for s in series]
        count = max([len(categories), *(len(v) for v in values)])
        rows = [header]
        for index in range(count):
            label = categories[index] if index < len(categories) else str(index + 1)
            rows.append([label, *(_number(v[index]) if index < len(v) else "" for v in values)])
        blocks.append(markdown_table(rows))
    return blocks


def _number(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


def _notes(slide: Slide) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return ""
    paragraphs = [clean_text(p.text).strip() for p in frame.paragraphs]
    return "\n\n".join(escape_text(p) for p in paragraphs if p)
