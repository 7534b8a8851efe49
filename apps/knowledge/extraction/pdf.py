"""PDF with pypdf.

Output: one ``## Page N`` section per page (N from 1), holding the page's text in pypdf's
reading order, so every chunk knows its page. PDFs carry no reliable heading structure, so the
page sections are the only headings. A page without text says so in italics.

* Encrypted files are opened with the empty user password when that works (files that only
  restrict copying or printing); otherwise extraction fails saying the PDF is password-protected.
* Pages without text that draw images (scans) are read by OCR (``ocr``; on unless the caller
  says ``ocr=False``): their section starts with the line "_Text read by OCR from the page
  image._" and ``Extraction.ocr_pages`` lists them. A file where no page has text even so fails
  saying it looks scanned, rather than indexing nothing.
* Ligatures and Arabic presentation forms are normalised (see ``markdown.clean_text``), so
  "ﬁnd" is found as "find". pypdf 5+ already emits right-to-left runs in logical order; lines
  whose words are drawn one by one from left to right are put in reading order by
  ``pdf_bidi``.
* A page that pypdf cannot read is marked, and the other pages are kept. A page whose inline
  image cannot be parsed (which stops pypdf's reading of the page) is read again without its
  inline images, so its text layer is kept.
* CJK text drawn in simple TrueType fonts without a ToUnicode map (GBK, Big5, Shift-JIS
  bytes) is decoded as its real encoding when that gives valid text; see ``pdf_fonts``.
* Simple tables (rows of short cells in aligned columns, as in invoices) become markdown tables;
  see ``pdf_tables``. Pages without one keep pypdf's text as it is.
"""

from __future__ import annotations

import io
import logging
import re
import statistics
from collections.abc import Callable
from pathlib import PurePosixPath

from pypdf import PageObject, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError
from pypdf.generic import DecodedStreamObject, NameObject

from .errors import ExtractionFailed
from .markdown import clean_text, escape_text
from .ocr import NO_TESSERACT, ocr_image
from .pdf_bidi import reading_order
from .pdf_fonts import FontRecoder
from .pdf_tables import FragmentCollector, page_markdown_with_tables
from .result import Extraction
from .tools import TIMED_OUT, time_left

PASSWORD_PROTECTED = "This PDF is password-protected."
SCANNED = "This PDF has no extractable text (it looks like a scanned image)."
UNSUPPORTED_ENCRYPTION = "This PDF uses an encryption method we cannot open."
NO_PAGES = "This PDF has no pages."
NO_TEXT = "This PDF has no extractable text."
READ_BY_OCR = "_Text read by OCR from the page image._"
NOT_READ_BY_OCR = "_This page is an image; there was no time left to read it by OCR._"
# OCR of a page starts only with this much of the extraction's time left.
OCR_MIN_SECONDS_LEFT = 5.0
OCR_MAX_IMAGES_PER_PAGE = 8
OCR_MIN_IMAGE_PIXELS = 32

# pypdf logs a warning for every repair it makes to a broken file; hostile uploads would flood
# the worker's log with them. Real errors still surface as exceptions.
logging.getLogger("pypdf").setLevel(logging.ERROR)

# An inline image, from its BI operator to its EI (or to the end of a stream that never ends it).
_INLINE_IMAGE = re.compile(rb"(?<![^\s\]\[)(>])BI\s.*?(?:\sEI(?=\s|$)|\Z)", re.DOTALL)


def extract_pdf(data: bytes, *, ocr: bool = True) -> Extraction:
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        _decrypt(reader)
    try:
        pages = reader.pages
        page_count = len(pages)
    except FileNotDecryptedError:
        raise ExtractionFailed(PASSWORD_PROTECTED) from None
    if page_count == 0:
        raise ExtractionFailed(NO_PAGES)

    bodies = [_page_markdown(reader, number) for number in range(page_count)]
    ocr_pages = _ocr_pages_without_text(reader, bodies) if ocr else []
    sections = []
    found_text = False
    for number, body in enumerate(bodies):
        if body is None:
            body = "_This page could not be read._"
        elif body:
            found_text = True
        else:
            body = "_No text on this page._"
        sections.append(f"## Page {number + 1}\n\n{body}")
    if not found_text:
        raise ExtractionFailed(SCANNED if _has_images(reader) else NO_TEXT)
    return Extraction(
        markdown="\n\n".join(sections) + "\n",
        page_count=page_count,
        title=_title(reader),
        ocr_pages=ocr_pages,
    )


def _ocr_pages_without_text(reader: PdfReader, bodies: list[str | None]) -> list[int]:
    """OCR the images of pages without text, in place in ``bodies``; the page numbers read.

    Pages are read in order while the extraction's time lasts; a page left unread for lack of
    time says so. OCR that is not installed, or that runs out of time, stops the reading and
    keeps what was read.
    """
    read: list[int] = []
    stopped = False
    for index, body in enumerate(bodies):
        if body != "":
            continue
        images = _page_images(reader.pages[index])
        if not images:
            continue
        if stopped or time_left() < OCR_MIN_SECONDS_LEFT:
            bodies[index] = NOT_READ_BY_OCR
            continue
        texts = []
        for image, suffix, dpi in images:
            try:
                texts.append(ocr_image(image, suffix=suffix, dpi=dpi))
            except ExtractionFailed as exc:
                if str(exc) in (NO_TESSERACT, TIMED_OUT):
                    stopped = True
                    break
                # An image tesseract cannot read: the page's other images may still be read.
        text = "\n\n".join(clean_text(text).strip() for text in texts if text.strip())
        if text:
            bodies[index] = f"{READ_BY_OCR}\n\n{escape_text(text)}"
            read.append(index + 1)
        elif stopped:
            bodies[index] = NOT_READ_BY_OCR
    return read


def _page_images(page: PageObject) -> list[tuple[bytes, str, int | None]]:
    """The page's images big enough to hold text, as (file bytes, suffix, dots per inch)."""
    found = []
    try:
        width_inches = float(page.mediabox.width) / 72
        images = list(page.images)
    except MemoryError:
        raise
    except Exception:
        return []
    for image_file in images[:OCR_MAX_IMAGES_PER_PAGE]:
        try:
            picture = image_file.image
            if picture is None or min(picture.size) < OCR_MIN_IMAGE_PIXELS:
                continue
            dpi = round(picture.width / width_inches) if width_inches > 0 else None
            if image_file.name.lower().endswith((".jpg", ".jpeg", ".png")):
                found.append((image_file.data, PurePosixPath(image_file.name).suffix, dpi))
                continue
            if picture.mode not in ("1", "L", "RGB"):
                picture = picture.convert("RGB")
            encoded = io.BytesIO()
            picture.save(encoded, format="PNG")
            found.append((encoded.getvalue(), ".png", dpi))
        except MemoryError:
            raise
        except Exception:  # noqa: S112 - an image that cannot be decoded is skipped
            continue
    return found


def _decrypt(reader: PdfReader) -> None:
    try:
        opened = reader.decrypt("")
    except (DependencyError, NotImplementedError):
        raise ExtractionFailed(UNSUPPORTED_ENCRYPTION) from None
    if not opened:
        raise ExtractionFailed(PASSWORD_PROTECTED)


def _page_markdown(reader: PdfReader, number: int) -> str | None:
    """The page's markdown, "" for a page without text, None when it cannot be read."""
    collector = FragmentCollector()
    recoder = FontRecoder()

    def visitor(text: str, cm: list[float], tm: list[float], font: object, size: float) -> None:
        collector(recoder.recode(text, font), cm, tm, font, size)

    page = reader.pages[number]
    try:
        recoder.prepare(page)
        raw = recoder.apply(page.extract_text(visitor_text=visitor))
    except FileNotDecryptedError:
        raise ExtractionFailed(PASSWORD_PROTECTED) from None
    except MemoryError:
        raise
    except Exception:
        # One broken content stream should not lose the rest of the document. The usual
        # culprit is an inline image whose data cannot be parsed: read the text without it.
        collector.fragments.clear()
        without_images = _text_without_inline_images(page, visitor)
        if without_images is None:
            return None
        raw = recoder.apply(without_images)
    cleaned = reading_order(clean_text(raw or ""), collector.fragments)
    lines = [line.rstrip() for line in cleaned.split("\n")]
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        return ""
    try:
        with_tables = page_markdown_with_tables(collector.fragments)
    except (ValueError, ArithmeticError, statistics.StatisticsError):
        with_tables = None
    return with_tables or escape_text(text)


def _text_without_inline_images(page: PageObject, visitor: Callable[..., None]) -> str | None:
    try:
        contents = page.get_contents()
        data = contents.get_data() if contents is not None else b""
        if b"BI" not in data:
            return None
        stripped = DecodedStreamObject()
        stripped.set_data(_INLINE_IMAGE.sub(b" ", data))
        page[NameObject("/Contents")] = stripped
        return page.extract_text(visitor_text=visitor)
    except MemoryError:
        raise
    except Exception:
        return None


def _has_images(reader: PdfReader) -> bool:
    """Whether any page draws an image (directly or in a form), i.e. looks scanned."""
    try:
        for page in reader.pages:
            if _xobjects_have_image(page.get("/Resources"), depth=0):
                return True
    except Exception:
        return False
    return False


def _xobjects_have_image(resources: object, *, depth: int) -> bool:
    resources = resources.get_object() if hasattr(resources, "get_object") else resources
    if not isinstance(resources, dict) or depth > 3:
        return False
    xobjects: object = resources.get("/XObject")
    xobjects = xobjects.get_object() if hasattr(xobjects, "get_object") else xobjects
    if not isinstance(xobjects, dict):
        return False
    for reference in xobjects.values():
        xobject = reference.get_object() if hasattr(reference, "get_object") else reference
        if not isinstance(xobject, dict):
            continue
        if xobject.get("/Subtype") == "/Image":
            return True
        if xobject.get("/Subtype") == "/Form" and _xobjects_have_image(
            xobject.get("/Resources"), depth=depth + 1
        ):
            return True
    return False


def _title(reader: PdfReader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return None
    if not isinstance(title, str):
        return None
    title = " ".join(clean_text(title).split())
    return title[:300] or None
