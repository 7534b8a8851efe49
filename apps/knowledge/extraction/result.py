"""What an extraction returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Extraction:
    markdown: str
    # Pages of a PDF, slides of a presentation; None for everything else (a Word document's
    # pagination depends on the renderer; text, HTML and tables have none).
    page_count: int | None
    title: str | None
    # Pages (from 1) whose text was read by OCR from their images; each also says so in the
    # markdown, at the top of its section.
    ocr_pages: list[int] = field(default_factory=list)
