"""What an extraction returns."""

from __future__ import annotations

import re

# Characters str.isspace() counts as whitespace among ASCII: anything else ASCII is visible.
_NOT_ASCII_SPACE = re.compile(rb"[^\t\n\x0b\x0c\r\x1c-\x1f ]")


class Extraction:
    """The markdown of a file, and what the extractor knows of its pages and title.

    ``markdown`` may be given as UTF-8 bytes, which must be valid (the large JSON outline is
    written as bytes): they are decoded when first read. Through ``extract_bounded`` they cross
    the pipe as they are, rather than decoded in the child and encoded again for the pickle,
    which took a third of the child's time on a 10 MB file (docs/performance.md).
    """

    __slots__ = ("_markdown", "ocr_pages", "page_count", "title")

    def __init__(
        self,
        markdown: str | bytes,
        page_count: int | None,
        title: str | None,
        ocr_pages: list[int] | None = None,
    ) -> None:
        self._markdown = markdown
        # Pages of a PDF, slides of a presentation; None for everything else (a Word
        # document's pagination depends on the renderer; text, HTML and tables have none).
        self.page_count = page_count
        self.title = title
        # Pages (from 1) whose text was read by OCR from their images; each also says so in
        # the markdown, at the top of its section.
        self.ocr_pages = ocr_pages if ocr_pages is not None else []

    @property
    def markdown(self) -> str:
        if isinstance(self._markdown, bytes):
            self._markdown = self._markdown.decode()
        return self._markdown

    @markdown.setter
    def markdown(self, markdown: str) -> None:
        self._markdown = markdown

    def is_blank(self) -> bool:
        """Whether the markdown is empty or whitespace only, as str.isspace() says, without
        decoding bytes that start with a visible ASCII character."""
        markdown = self._markdown
        if isinstance(markdown, bytes):
            visible = _NOT_ASCII_SPACE.search(markdown)
            if visible is None:
                return True
            if markdown[visible.start()] < 0x80:
                return False
        # isspace() stops at the first visible character; strip() would copy a 10 MB text to
        # find out it is not empty.
        text = self.markdown
        return not text or text.isspace()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Extraction):
            return NotImplemented
        return (self.markdown, self.page_count, self.title, self.ocr_pages) == (
            other.markdown,
            other.page_count,
            other.title,
            other.ocr_pages,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:  # the markdown's first 60 characters: it can be 10 MB
        return (
            f"Extraction(markdown={self.markdown[:60]!r}, page_count={self.page_count!r}, "
            f"title={self.title!r}, ocr_pages={self.ocr_pages!r})"
        )
