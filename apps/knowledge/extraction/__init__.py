"""Document extraction: bytes in, markdown out.

The knowledge pipeline calls, in order::

    kind = detect_kind(data, file_name=name)         # UnsupportedType for anything else
    result = extract_bounded(data, kind=kind)        # ExtractionFailed with a human message
    chunks = chunk_markdown(result.markdown)

``extract`` does the work in-process; ``extract_bounded`` runs it in a forked child with memory
and time limits, and is what a worker should call on untrusted files. One module (or package)
per format (``pdf``, ``word``, ``excel``, ``powerpoint``, ``legacy`` for Office 97-2003 files,
``html``, ``tabular`` for CSV and JSON, ``text``); each module's docstring says how that format
is written as markdown. Tables are always written by ``markdown.markdown_table``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from .bounded import extract_bounded
from .chunking import Chunk, chunk_markdown
from .detect import detect_kind
from .errors import DAMAGED, ExtractionFailed, UnsupportedType
from .result import Extraction

__all__ = [
    "SUPPORTED_KINDS",
    "Chunk",
    "Extraction",
    "ExtractionFailed",
    "UnsupportedType",
    "chunk_markdown",
    "detect_kind",
    "extract",
    "extract_bounded",
]

SUPPORTED_KINDS = (
    "pdf",
    "docx",
    "xlsx",
    "pptx",
    "doc",
    "xls",
    "ppt",
    "html",
    "csv",
    "json",
    "markdown",
    "text",
)

# kind -> (module, function). Modules are imported on first use: trafilatura and friends
# take a while to import and a web process that only detects kinds never needs them.
_EXTRACTORS: dict[str, tuple[str, str]] = {
    "pdf": ("pdf", "extract_pdf"),
    "docx": ("word", "extract_docx"),
    "xlsx": ("excel", "extract_xlsx"),
    "pptx": ("powerpoint", "extract_pptx"),
    "doc": ("legacy", "extract_doc"),
    "xls": ("legacy", "extract_xls"),
    "ppt": ("legacy", "extract_ppt"),
    "html": ("html", "extract_html"),
    "csv": ("tabular", "extract_csv"),
    "json": ("tabular", "extract_json"),
    "markdown": ("text", "extract_markdown"),
    "text": ("text", "extract_text"),
}
TOO_MUCH_MEMORY = "The file needs too much memory to extract."


def extractor_for(kind: str) -> Callable[..., Extraction]:
    """The function that extracts ``kind``; importing it early makes forked children fast."""
    if kind not in _EXTRACTORS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {SUPPORTED_KINDS}")
    module_name, function_name = _EXTRACTORS[kind]
    module = importlib.import_module(f"{__name__}.{module_name}")
    function: Callable[..., Extraction] = getattr(module, function_name)
    return function


def extract(
    data: bytes, *, kind: str, source_url: str | None = None, ocr: bool = True
) -> Extraction:
    """Extract ``data`` of ``kind`` (from ``detect_kind``) to markdown.

    Raises ExtractionFailed, whose text is safe to show, for every problem with the input.
    ``source_url`` lets HTML resolve relative links; ``ocr`` lets PDF pages that are images be
    read by OCR. A valid file without text (a presentation
    without slides, a blank text file) gives empty markdown: it is empty, not broken.
    """
    function = extractor_for(kind)
    try:
        if kind == "html":
            result = function(data, source_url=source_url)
        elif kind == "pdf":
            result = function(data, ocr=ocr)
        else:
            result = function(data)
    except ExtractionFailed:
        raise
    except MemoryError:
        raise ExtractionFailed(TOO_MUCH_MEMORY) from None
    except Exception:
        # Parsers raise anything on hostile input (KeyError, ValueError, RecursionError, ...).
        # The caller needs one exception type and a message for people.
        raise ExtractionFailed(DAMAGED) from None
    if result.is_blank():
        result.markdown = ""
    return result
