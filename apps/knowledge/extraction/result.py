"""What an extraction returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Extraction:
    markdown: str
    # Pages of a PDF, slides of a presentation; None for everything else (a Word document's
    # pagination depends on the renderer; text, HTML and tables have none).
    page_count: int | None
    title: str | None
