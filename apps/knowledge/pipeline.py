"""The worker side of knowledge: ingest, refresh, and the two beat sweepers.

Each piece of work is claimed with a conditional update that sets a lease (`claimed_until`);
the fetch and the extraction run with no transaction open and no row locked; the result is
written in one short transaction that first locks the document row and re-reads its state, so
a document deleted meanwhile is left alone ("obsolete"). A worker killed mid-task leaves an
expired lease, and `documents_recover_stalled` queues the work again. Every failure becomes a
short human message on the document, never a stack trace.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.common import metrics
from apps.common.http import FetchError, fetch
from apps.common.lexical import detect_language, index_text, passage_config
from apps.knowledge import embedding_jobs
from apps.knowledge.extraction import (
    ExtractionFailed,
    UnsupportedType,
    chunk_markdown,
    detect_kind,
    extract_bounded,
)
from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion, KnowledgeDocument
from apps.knowledge.search.fts import index_chunks, unindex_chunks
from apps.knowledge.services import enqueue_after_commit, next_refresh_time
from apps.workspaces.models import Agent

logger = logging.getLogger(__name__)

Status = KnowledgeDocument.Status
RefreshStatus = KnowledgeDocument.RefreshStatus
SourceType = KnowledgeDocument.SourceType


def claim_lease() -> timedelta:
    """How long a claim lasts without a heartbeat (KNOWLEDGE_CLAIM_LEASE_SECONDS, 30 s).

    A live worker renews it every third of that while it works (`_heartbeat`), so a long fetch
    or extraction keeps its claim; a killed worker's claim runs out within one lease, and the
    `knowledge.recover_stalled` sweep (every KNOWLEDGE_RECOVER_INTERVAL_SECONDS) queues it again.
    """
    return timedelta(seconds=settings.KNOWLEDGE_CLAIM_LEASE_SECONDS)


def queue_grace() -> timedelta:
    """Work queued this long ago and never claimed is queued again: the broker lost the message
    (a Redis restart without persistence, a killed worker's prefetched task). Long, because a
    busy queue is not a lost one; a task that could not be queued at all does not wait for it."""
    return timedelta(seconds=settings.KNOWLEDGE_QUEUE_GRACE_SECONDS)


# A document whose work was claimed this many times without finishing fails for good.
MAX_ATTEMPTS = 3
EXTRACT_TIMEOUT_S = 60
# A PDF may have pages read by OCR (a few seconds each): it gets longer, within the task's
# 120 s soft time limit; pages left when its time runs out are marked as not read.
PDF_EXTRACT_TIMEOUT_S = 90
EXTRACT_MEMORY_MB = 1024
FETCH_MAX_BYTES = 10 * 1024 * 1024
CHUNK_MAX_CHARS = 1800

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


# --- claims -------------------------------------------------------------------------------


def _claim(document_id: str, *, work: Q) -> tuple[str, KnowledgeDocument | None]:
    now = timezone.now()
    claimed = (
        KnowledgeDocument.objects.filter(work, pk=document_id)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + claim_lease(), attempts=F("attempts") + 1)
    )
    if not claimed:
        busy = KnowledgeDocument.objects.filter(work, pk=document_id).exists()
        return ("busy" if busy else "obsolete"), None
    document = KnowledgeDocument.objects.filter(pk=document_id).first()
    return ("claimed", document) if document is not None else ("obsolete", None)


@contextmanager
def _heartbeat(document_id: str, *, work: Q) -> Iterator[None]:
    """Renew the claim every third of the lease while the caller works.

    A thread of its own (with its own database connection) does it, because the caller spends
    its time blocked in a fetch or waiting for the extraction subprocess. The renewal only
    touches a claim that is still held, so a document released or deleted meanwhile is left.
    """
    lease = claim_lease()
    stop = threading.Event()

    def renew() -> None:
        try:
            while not stop.wait(lease.total_seconds() / 3):
                KnowledgeDocument.objects.filter(
                    work, pk=document_id, claimed_until__isnull=False
                ).update(claimed_until=timezone.now() + lease)
        except Exception:
            logger.warning("could not renew the claim on %s", document_id, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=renew, name=f"claim-heartbeat-{document_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _release(document_id: str, *, work: Q, **changes) -> bool:
    changes.update(claimed_until=None, attempts=0, queued_at=None, updated_at=timezone.now())
    return bool(KnowledgeDocument.objects.filter(work, pk=document_id).update(**changes))


# --- reading and extracting -----------------------------------------------------------------


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


# Set on the document by _write_version; the callers save them.
SEARCH_FIELDS = ["language", "search_configs", "chunk_count", "embedded_chunk_count"]


def _write_version(document: KnowledgeDocument, content: Content, sha256: str):
    """Create a version with its chunks and search vectors (inside the caller's transaction).
    The chunks are searchable at once when the document is enabled: the caller makes the
    version current in the same transaction."""
    document.language = detect_language(content.markdown)
    version = KnowledgeContentVersion.objects.create(
        document=document, markdown=content.markdown, sha256=sha256, page_count=content.page_count
    )
    rows = []
    for chunk in chunk_markdown(content.markdown, max_chars=CHUNK_MAX_CHARS):
        rows.append(
            KnowledgeChunk(
                version=version,
                document=document,
                agent_id=document.agent_id,
                heading_path=chunk.heading_path,
                text=chunk.text,
                position=chunk.position,
                search_config=passage_config(chunk.text, document_config=document.language),
                index_text=index_text(chunk.text),
                is_searchable=document.is_enabled,
            )
        )
    document.search_configs = ",".join(
        sorted({row.search_config for row in rows} or {document.language})
    )
    chunks = KnowledgeChunk.objects.bulk_create(rows, batch_size=500)
    index_chunks(chunks)
    document.chunk_count = len(chunks)
    document.embedded_chunk_count = 0
    return version


def _sha256(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


# --- ingest ----------------------------------------------------------------------------------

INGEST_WORK = Q(status=Status.PROCESSING)


def document_ingest(*, document_id: str) -> str:
    """First extraction and indexing of a document: "ready", "failed", "busy" or "obsolete"."""
    outcome, document, content = _claim_and_produce(
        document_id,
        work=INGEST_WORK,
        fail=lambda _document, message: _fail_ingest(document_id, message),
        what="ingest",
    )
    if document is None or content is None:
        return outcome

    now = timezone.now()
    with transaction.atomic():
        document = (
            KnowledgeDocument.objects.select_for_update()
            .filter(INGEST_WORK, pk=document_id)
            .first()
        )
        if document is None:
            return "obsolete"
        version = _write_version(document, content, _sha256(content.markdown))
        document.current_version = version
        document.kind = content.kind
        document.status = Status.READY
        document.error_message = None
        document.character_count = len(content.markdown)
        document.last_synced_at = now
        document.last_checked_at = now
        document.next_refresh_at = next_refresh_time(document, base=now)
        document.claimed_until = None
        document.attempts = 0
        document.queued_at = None
        document.save(
            update_fields=[
                "current_version",
                "kind",
                "status",
                "error_message",
                "character_count",
                "last_synced_at",
                "last_checked_at",
                "next_refresh_at",
                "claimed_until",
                "attempts",
                "queued_at",
                "updated_at",
                *SEARCH_FIELDS,
            ]
        )
        enqueue_after_commit("embed", document_id)
    return "ready"


def _fail_ingest(document_id: str, message: str) -> str:
    released = _release(
        document_id, work=INGEST_WORK, status=Status.FAILED, error_message=message[:500]
    )
    return "failed" if released else "obsolete"


# --- refresh ---------------------------------------------------------------------------------

REFRESH_WORK = Q(refresh_status=RefreshStatus.REFRESHING, source_type=SourceType.URL)


def document_refresh(*, document_id: str) -> str:
    """Fetch a URL document again; "refreshed", "unchanged", "failed", "busy" or "obsolete".

    The new version replaces the old one in one transaction only after extraction and
    indexing succeeded; until then content and search serve the previous version. A failure
    keeps the previous content and records `refresh_error_message`.
    """
    outcome, document, content = _claim_and_produce(
        document_id, work=REFRESH_WORK, fail=_fail_refresh, what="refresh"
    )
    if document is None or content is None:
        return outcome

    sha256 = _sha256(content.markdown)
    now = timezone.now()
    with transaction.atomic():
        document = (
            KnowledgeDocument.objects.select_for_update(of=("self",))
            .select_related("current_version")
            .filter(REFRESH_WORK, pk=document_id)
            .first()
        )
        if document is None:
            return "obsolete"
        fields = ["refresh_status", "refresh_error_message", "last_checked_at", "next_refresh_at"]
        fields += ["claimed_until", "attempts", "queued_at", "updated_at"]
        unchanged = document.current_version is not None and (
            document.current_version.sha256 == sha256
        )
        if not unchanged:
            old_version_id = document.current_version_id
            document.current_version = _write_version(document, content, sha256)
            document.kind = content.kind
            document.status = Status.READY
            document.error_message = None
            document.character_count = len(content.markdown)
            document.last_synced_at = now
            fields += ["current_version", "kind", "status", "error_message", "character_count"]
            fields += ["last_synced_at", *SEARCH_FIELDS]
            if old_version_id is not None and document.current_version_id is not None:
                embedding_jobs.carry_over(
                    document=document,
                    old_version_id=old_version_id,
                    new_version_id=document.current_version_id,
                )
            enqueue_after_commit("embed", document_id)
        document.refresh_status = RefreshStatus.IDLE
        document.refresh_error_message = None
        document.last_checked_at = now
        document.next_refresh_at = next_refresh_time(document, base=now)
        document.claimed_until = None
        document.attempts = 0
        document.queued_at = None
        document.save(update_fields=fields)
        if not unchanged and old_version_id is not None:
            unindex_chunks(version_ids=[old_version_id])
            KnowledgeContentVersion.objects.filter(pk=old_version_id).delete()
    return "unchanged" if unchanged else "refreshed"


def _fail_refresh(document: KnowledgeDocument, message: str) -> str:
    now = timezone.now()
    released = _release(
        document.pk,
        work=REFRESH_WORK,
        refresh_status=RefreshStatus.FAILED,
        refresh_error_message=message[:500],
        last_checked_at=now,
        # Scheduled refreshes keep trying at the usual interval.
        next_refresh_at=next_refresh_time(document, base=now),
    )
    return "failed" if released else "obsolete"


# --- beat sweepers ---------------------------------------------------------------------------


def documents_refresh_due(*, batch_size: int = 100) -> list[str]:
    """Claim URL documents whose scheduled refresh is due and queue their refresh.

    `FOR UPDATE SKIP LOCKED` lets several beats (or a beat and a person pressing refresh) run
    at once: each due document is claimed by exactly one of them.
    """
    now = timezone.now()
    with transaction.atomic():
        due = list(
            KnowledgeDocument.objects.select_for_update(skip_locked=True)
            .filter(
                source_type=SourceType.URL,
                next_refresh_at__isnull=False,
                next_refresh_at__lte=now,
                refresh_interval_hours__gt=0,
                # An archived Agent's refreshes wait (still due) until it is restored. A
                # subquery, not a join, so FOR UPDATE locks no Agent row.
                agent_id__in=Agent.objects.filter(status=Agent.Status.ACTIVE).values("pk"),
            )
            .exclude(status=Status.PROCESSING)
            .exclude(refresh_status=RefreshStatus.REFRESHING)
            .order_by("next_refresh_at")
            .values_list("pk", flat=True)[:batch_size]
        )
        if not due:
            return []
        KnowledgeDocument.objects.filter(pk__in=due).update(
            refresh_status=RefreshStatus.REFRESHING,
            refresh_error_message=None,
            next_refresh_at=None,
            queued_at=now,
            attempts=0,
            updated_at=now,
        )
        for document_id in due:
            enqueue_after_commit("refresh", document_id)
    return due


def documents_recover_stalled(*, batch_size: int = 100) -> list[str]:
    """Queue again the work of documents whose worker died (lease expired), whose task could
    not be queued (`queued_at` cleared: picked up at once) or was lost (queued long ago, never
    claimed). Runs every few seconds, so it stays one query on the `knowledge_doc_working`
    partial index, which holds only documents with work in progress."""
    now = timezone.now()
    working = Q(status=Status.PROCESSING) | Q(refresh_status=RefreshStatus.REFRESHING)
    stalled = Q(claimed_until__lt=now) | Q(
        Q(claimed_until__isnull=True) & (Q(queued_at__lt=now - queue_grace()) | Q(queued_at=None))
    )
    with transaction.atomic():
        rows = list(
            KnowledgeDocument.objects.select_for_update(skip_locked=True)
            .filter(working)
            .filter(stalled)
            .order_by("queued_at")
            .values_list("pk", "status")[:batch_size]
        )
        if not rows:
            return []
        KnowledgeDocument.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            claimed_until=None, queued_at=now
        )
        for document_id, status in rows:
            enqueue_after_commit(
                "ingest" if status == Status.PROCESSING else "refresh", document_id
            )
    return [pk for pk, _ in rows]
