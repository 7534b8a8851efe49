"""What an extraction returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Extraction:
    markdown: str
    # Pages for PDFs, slides for presentations, sheets for workbooks; None where there is no
    # such unit (text, HTML, Word documents, whose pagination depends on the renderer).
    page_count: int | None
    title: str | None
