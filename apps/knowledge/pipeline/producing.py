"""Producing a document's content: claiming its work, reading its bytes (the stored file or a
bounded fetch) and extracting Markdown in a bounded subprocess; every failure a message for
people."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q

from apps.common import metrics
from apps.common.http import FetchError, fetch
from apps.knowledge.extraction import (
    ExtractionFailed,
    UnsupportedType,
    detect_kind,
    extract_bounded,
)
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.pipeline.claims import _claim, _heartbeat

logger = logging.getLogger(__name__)

SourceType = KnowledgeDocument.SourceType


# A document whose work was claimed this many times without finishing fails for good.
MAX_ATTEMPTS = 3
EXTRACT_TIMEOUT_S = 60
# A PDF may have pages read by OCR (a few seconds each): it gets longer, within the task's
# 120 s soft time limit; pages left when its time runs out are marked as not read.
PDF_EXTRACT_TIMEOUT_S = 90
EXTRACT_MEMORY_MB = 1024
FETCH_MAX_BYTES = 10 * 1024 * 1024


INTERRUPTED = "Processing was interrupted several times; the document could not be processed."
UNEXPECTED = "Processing failed unexpectedly."

_NAME_HINTS = {
    "text/html": "page.html",
    "application/xhtml+xml": "page.html",
    "text/markdown": "page.md",
    "text/x-markdown": "page.md",
    "text/csv": "page.csv",
    "application/json": "page.json",
}


class WorkFailed(Exception):
    """A step failed with a message for people."""


@dataclass
class Content:
    markdown: str
    page_count: int | None
    kind: str


def _read_source(document: KnowledgeDocument) -> tuple[bytes, str | None, str]:
    """The document's bytes, the URL they came from (for links) and a name hint for the type."""
    if document.source_type == SourceType.FILE:
        try:
            with document.file.open("rb") as stored:
                return (
                    stored.read(settings.KNOWLEDGE_MAX_UPLOAD_BYTES + 1),
                    None,
                    document.file_name or "",
                )
        except (OSError, ValueError):
            raise WorkFailed("The stored file is missing.") from None
    if not document.source_url:
        raise WorkFailed("The document has no URL to fetch.")
    try:
        result = fetch(document.source_url, max_bytes=FETCH_MAX_BYTES)
    except FetchError as exc:
        if exc.blocked:
            raise WorkFailed(f"Blocked by the network guard: {exc}") from None
        raise WorkFailed(str(exc)) from None
    return result.body, result.url, _name_hint(result.url, result.content_type)


def _name_hint(url: str, content_type: str | None) -> str:
    if content_type in _NAME_HINTS:
        return _NAME_HINTS[content_type]
    name = PurePosixPath(urlsplit(url).path).name
    return name or "page"


def _extract(data: bytes, *, source_url: str | None, name_hint: str | None) -> Content:
    try:
        kind = detect_kind(data, file_name=name_hint)
    except UnsupportedType as exc:
        raise WorkFailed(str(exc)) from None
    started = time.perf_counter()
    try:
        result = extract_bounded(
            data,
            kind=kind,
            source_url=source_url,
            ocr=settings.KNOWLEDGE_OCR,
            timeout_s=PDF_EXTRACT_TIMEOUT_S if kind == "pdf" else EXTRACT_TIMEOUT_S,
            memory_mb=EXTRACT_MEMORY_MB,
        )
    except ExtractionFailed as exc:
        metrics.EXTRACTION_DURATION.labels(kind, "failed").observe(time.perf_counter() - started)
        raise WorkFailed(str(exc)) from None
    metrics.EXTRACTION_DURATION.labels(kind, "ok").observe(time.perf_counter() - started)
    return Content(markdown=result.markdown, page_count=result.page_count, kind=kind)


def _claim_and_produce(
    document_id: str,
    *,
    work: Q,
    fail: Callable[[KnowledgeDocument, str], str],
    what: str,
) -> tuple[str, KnowledgeDocument | None, Content | None]:
    """Claim the document for `work` and extract and index it under a heartbeat.

    Returns the outcome word and, when the work succeeded, the claimed document and its content;
    a document past its attempts, or whose work failed, is handed to `fail` (whose word is the
    outcome) and comes back as None.
    """
    outcome, document = _claim(document_id, work=work)
    if document is None:
        return outcome, None, None
    if document.attempts > MAX_ATTEMPTS:
        return fail(document, INTERRUPTED), None, None
    try:
        with _heartbeat(document_id, work=work):
            return outcome, document, _produce(document)
    except WorkFailed as exc:
        return fail(document, str(exc)), None, None
    except Exception:
        logger.exception("knowledge %s of %s failed unexpectedly", what, document_id)
        return fail(document, UNEXPECTED), None, None


def _produce(document: KnowledgeDocument) -> Content:
    data, source_url, name_hint = _read_source(document)
    return _extract(data, source_url=source_url, name_hint=name_hint)
