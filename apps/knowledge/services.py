"""Changes to knowledge documents asked for by people (API and console alike).

The work itself (fetch, extract, chunk, index) runs in Celery; see apps.knowledge.pipeline.
Every function takes the Agent first, so another Agent's document is simply not found.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import get_valid_filename

from apps.common.errors import BadRequest, Conflict, PayloadTooLarge, UnsupportedMediaType
from apps.common.netguard import BlockedURL, check_url
from apps.knowledge.extraction import UnsupportedType, detect_kind
from apps.knowledge.models import DEFAULT_REFRESH_INTERVAL, KnowledgeChunk, KnowledgeDocument
from apps.knowledge.search.fts import unindex_chunks
from apps.knowledge.selectors import document_get
from apps.knowledge.uploads import too_large_message
from apps.workspaces.audit import audit_diff, audit_record
from apps.workspaces.models import Agent

logger = logging.getLogger(__name__)

MAX_NAME_LENGTH = 120
SUPPORTED_TEXT = (
    "PDF, Word (.docx, .doc), Excel (.xlsx, .xls), PowerPoint (.pptx, .ppt), text, Markdown, "
    "HTML, CSV or JSON"
)

Status = KnowledgeDocument.Status
RefreshStatus = KnowledgeDocument.RefreshStatus
SourceType = KnowledgeDocument.SourceType


def _audit(
    agent: Agent, document: KnowledgeDocument, action: str, changes: dict | None = None
) -> None:
    """One audit entry about `document` (apps.workspaces.audit), in the caller's transaction."""
    audit_record(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        action=action,
        target_type="document",
        target_id=document.pk,
        target_name=document.name,
        changes=changes,
    )


def max_upload_bytes() -> int:
    return settings.KNOWLEDGE_MAX_UPLOAD_BYTES


def enqueue_after_commit(task_name: str, document_id: str) -> None:
    """Queue a knowledge task once the current transaction commits.

    A broker that is down is logged, not raised: the row's `queued_at` is cleared, which the
    `knowledge.recover_stalled` sweep (every few seconds) takes as "queue it now", so nothing is
    lost and nothing waits longer than the broker's outage plus one sweep.
    """

    def send() -> None:
        from apps.knowledge import tasks

        task = {"ingest": tasks.ingest, "refresh": tasks.refresh, "embed": tasks.embed}[task_name]
        try:
            task.apply_async(args=[document_id], retry=False)
        except Exception as exc:
            logger.warning(
                "could not queue knowledge.%s for %s (%r); recover_stalled will queue it",
                task_name,
                document_id,
                exc,
            )
            # No queued task exists: mark it for the sweeper's next run instead of letting it
            # wait out the grace period meant for tasks the broker lost after accepting them.
            KnowledgeDocument.objects.filter(pk=document_id, claimed_until__isnull=True).update(
                queued_at=None
            )

    transaction.on_commit(send)


def _check_name(name: str | None) -> str | None:
    if name is None:
        return None
    name = name.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise BadRequest(f"name: must be 1 to {MAX_NAME_LENGTH} characters long.")
    return name


def _check_interval(hours: int) -> int:
    from apps.knowledge.models import REFRESH_INTERVALS

    if isinstance(hours, bool) or hours not in REFRESH_INTERVALS:
        raise BadRequest(
            "refresh_interval_hours: must be one of " + ", ".join(map(str, REFRESH_INTERVALS)) + "."
        )
    return hours


def next_refresh_time(document: KnowledgeDocument, *, base=None):
    """When a URL document's scheduled refresh is due; None when it has none."""
    hours = document.refresh_interval_hours
    base = base or document.last_checked_at
    if document.source_type != SourceType.URL or not hours or base is None:
        return None
    return base + timedelta(hours=hours)


def _sha256_of(upload: UploadedFile) -> str:
    digest = hashlib.sha256()
    upload.seek(0)
    for piece in upload.chunks():
        digest.update(piece)
    upload.seek(0)
    return digest.hexdigest()


def document_create_from_upload(
    *, agent: Agent, upload: UploadedFile, name: str | None = None
) -> KnowledgeDocument:
    """Store an uploaded file as a new document and queue its ingestion.

    The type comes from the bytes (`detect_kind`), never from the name or the client's
    content type. The file is moved (or streamed) into storage, not copied through memory.
    """
    limit = max_upload_bytes()
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(too_large_message(limit))
    file_name = (upload.name or "").strip() or "upload"
    name = _check_name(name) or file_name[:MAX_NAME_LENGTH].strip() or "upload"
    upload.seek(0)
    head = upload.read(limit + 1)  # bounded by the limit checked while streaming
    try:
        kind = detect_kind(head, file_name=file_name)
    except UnsupportedType as exc:
        raise UnsupportedMediaType(
            f"Unsupported file type: {exc.detected}. Upload {SUPPORTED_TEXT}."
        ) from None
    del head
    sha256 = _sha256_of(upload)
    existing = KnowledgeDocument.objects.filter(
        agent=agent, source_type=SourceType.FILE, content_sha256=sha256
    ).first()
    if existing is not None:
        raise _duplicate_file(existing)

    document = KnowledgeDocument(
        agent=agent,
        name=name,
        source_type=SourceType.FILE,
        file_name=file_name[:255],
        file_size_bytes=upload.size,
        content_sha256=sha256,
        kind=kind,
        status=Status.PROCESSING,
        queued_at=timezone.now(),
    )
    stored_name = get_valid_filename(Path(file_name).name)[:100] or "upload"
    document.file.save(stored_name, upload, save=False)
    try:
        with transaction.atomic():
            document.save(force_insert=True)
            _audit(
                agent,
                document,
                "document.created",
                {
                    "source_type": SourceType.FILE,
                    "file_name": document.file_name,
                    "file_size_bytes": document.file_size_bytes,
                },
            )
            enqueue_after_commit("ingest", document.pk)
    except IntegrityError:
        _delete_stored_files(document)
        existing = KnowledgeDocument.objects.filter(
            agent=agent, source_type=SourceType.FILE, content_sha256=sha256
        ).first()
        if existing is not None:
            raise _duplicate_file(existing) from None
        raise
    except BaseException:
        _delete_stored_files(document)
        raise
    return document


def _duplicate_file(existing: KnowledgeDocument) -> Conflict:
    return Conflict(
        f"This file is already uploaded for this Agent as “{existing.name}” ({existing.pk})."
    )


def document_create_from_url(
    *,
    agent: Agent,
    url: str,
    name: str | None = None,
    refresh_interval_hours: int = DEFAULT_REFRESH_INTERVAL,
) -> KnowledgeDocument:
    """Add a public URL as a document and queue its first fetch.

    The network guard normalizes the URL (a bare host becomes https://host/) and refuses
    anything that is not public http(s), including hosts that resolve to private addresses;
    the fetch checks every redirect hop again.
    """
    try:
        normalized, _addresses = check_url(url)
    except BlockedURL as exc:
        raise BadRequest(f"url: {exc}") from None
    name = _check_name(name) or normalized[:MAX_NAME_LENGTH]
    interval = _check_interval(refresh_interval_hours)
    existing = KnowledgeDocument.objects.filter(
        agent=agent, source_type=SourceType.URL, normalized_url=normalized
    ).first()
    if existing is not None:
        raise _duplicate_url(existing)
    try:
        with transaction.atomic():
            document = KnowledgeDocument.objects.create(
                agent=agent,
                name=name,
                source_type=SourceType.URL,
                source_url=normalized,
                normalized_url=normalized,
                refresh_interval_hours=interval,
                status=Status.PROCESSING,
                queued_at=timezone.now(),
            )
            _audit(
                agent,
                document,
                "document.created",
                {
                    "source_type": SourceType.URL,
                    "source_url": normalized,
                    "refresh_interval_hours": interval,
                },
            )
            enqueue_after_commit("ingest", document.pk)
    except IntegrityError:
        existing = KnowledgeDocument.objects.filter(
            agent=agent, source_type=SourceType.URL, normalized_url=normalized
        ).first()
        if existing is not None:
            raise _duplicate_url(existing) from None
        raise
    return document


def _duplicate_url(existing: KnowledgeDocument) -> Conflict:
    return Conflict(
        f"This URL is already a document of this Agent: “{existing.name}” ({existing.pk})."
    )


def document_update(
    *, agent: Agent, document_id: str, name: str | None = None, is_enabled: bool | None = None
) -> KnowledgeDocument:
    """Rename and/or enable or disable a document. Enabling or disabling flips the
    `is_searchable` flag of the current version's chunks in the same transaction, so the
    document drops out of results at once and comes back without re-indexing."""
    if name is None and is_enabled is None:
        raise BadRequest("Send at least one of name and is_enabled.")
    document = document_get(agent=agent, document_id=document_id)
    changes: dict = {"updated_at": timezone.now()}
    if name is not None:
        changes["name"] = _check_name(name)
    if is_enabled is not None:
        changes["is_enabled"] = is_enabled
    with transaction.atomic():
        # The row lock orders us with a worker writing a new version (it locks the row too).
        locked = (
            KnowledgeDocument.objects.select_for_update()
            .filter(agent=agent, pk=document.pk)
            .values_list("current_version_id", "status")
            .first()
        )
        if locked is None:  # deleted meanwhile
            return document_get(agent=agent, document_id=document_id)  # raises NotFound
        KnowledgeDocument.objects.filter(agent=agent, pk=document.pk).update(**changes)
        diff = audit_diff(
            {"name": document.name, "is_enabled": document.is_enabled},
            changes,
            [field for field in ("name", "is_enabled") if field in changes],
        )
        if diff:
            _audit(agent, document, _update_action(diff), diff)
        version_id, status = locked
        if is_enabled is not None and version_id is not None:
            KnowledgeChunk.objects.filter(document_id=document.pk, version_id=version_id).update(
                is_searchable=is_enabled and status == KnowledgeDocument.Status.READY
            )
    return document_get(agent=agent, document_id=document_id)


def _update_action(diff: dict) -> str:
    """document.enabled / document.disabled for a toggle alone, else document.updated."""
    if set(diff) == {"is_enabled"}:
        return "document.enabled" if diff["is_enabled"]["to"] else "document.disabled"
    return "document.updated"


def document_delete(*, agent: Agent, document_id: str) -> None:
    """Delete the document, its stored file, every content version, chunk and search vector.

    Rows go in one transaction (the row lock makes a worker finishing at the same moment
    either land before us, and be deleted with the rest, or find no row and give up); the
    stored file goes once that transaction has committed.
    """
    with transaction.atomic():
        document = (
            KnowledgeDocument.objects.select_for_update()
            .filter(agent=agent, pk=document_id)
            .first()
        )
        if document is None:
            document_get(agent=agent, document_id=document_id)  # raises NotFound
            return
        unindex_chunks(document_ids=[document.pk])
        _audit(
            agent,
            document,
            "document.deleted",
            {
                "source_type": document.source_type,
                "source_url": document.source_url,
                "file_name": document.file_name,
            },
        )
        KnowledgeDocument.objects.filter(pk=document.pk).update(current_version=None)
        document.versions.all().delete()
        KnowledgeDocument.objects.filter(pk=document.pk).delete()
        transaction.on_commit(lambda: _delete_stored_files(document))


def _delete_stored_files(document: KnowledgeDocument) -> None:
    """Remove the document's folder under MEDIA_ROOT (its file and anything else in it)."""
    if not document.file:
        return
    try:
        path = Path(document.file.path)
    except (ValueError, NotImplementedError):
        document.file.delete(save=False)
        return
    folder = path.parent
    media_root = Path(settings.MEDIA_ROOT).resolve()
    if folder.resolve().is_relative_to(media_root / "knowledge") and folder.name == document.pk:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def document_refresh_request(*, agent: Agent, document_id: str) -> KnowledgeDocument:
    """Start a refresh of a URL document, or join the one already running (202 either way).

    File documents cannot be refreshed and neither can a document whose first ingestion is
    still processing (409). A document already refreshing is left as it is: no second refresh.
    """
    document = document_get(agent=agent, document_id=document_id)
    if document.source_type != SourceType.URL:
        raise Conflict("Only URL documents can be refreshed; upload the file again instead.")
    now = timezone.now()
    with transaction.atomic():
        started = (
            KnowledgeDocument.objects.filter(agent=agent, pk=document.pk)
            .exclude(status=Status.PROCESSING)
            .exclude(refresh_status=RefreshStatus.REFRESHING)
            .update(
                refresh_status=RefreshStatus.REFRESHING,
                refresh_error_message=None,
                queued_at=now,
                attempts=0,
                updated_at=now,
            )
        )
        if started:
            _audit(agent, document, "document.refresh_requested")
            enqueue_after_commit("refresh", document.pk)
    document = document_get(agent=agent, document_id=document_id)
    if not started and document.status == Status.PROCESSING:
        raise Conflict("The document is still being processed for the first time; try later.")
    return document


def document_retry(*, agent: Agent, document_id: str) -> KnowledgeDocument:
    """Ingest a failed document again from its source (the stored file or the URL).

    Only a failed document can be retried (409 otherwise); the move back to `processing` is a
    conditional update, so a double click queues one ingestion, not two.
    """
    document = document_get(agent=agent, document_id=document_id)
    now = timezone.now()
    with transaction.atomic():
        retried = KnowledgeDocument.objects.filter(
            agent=agent, pk=document.pk, status=Status.FAILED
        ).update(
            status=Status.PROCESSING,
            error_message=None,
            queued_at=now,
            claimed_until=None,
            attempts=0,
            updated_at=now,
        )
        if retried:
            _audit(agent, document, "document.retried")
            enqueue_after_commit("ingest", document.pk)
    if not retried:
        raise Conflict("Only a failed document can be retried.")
    return document_get(agent=agent, document_id=document_id)


def document_schedule(
    *, agent: Agent, document_id: str, refresh_interval_hours: int
) -> KnowledgeDocument:
    """Set how often a URL document is refreshed; 0 turns scheduled refreshes off."""
    interval = _check_interval(refresh_interval_hours)
    document = document_get(agent=agent, document_id=document_id)
    if document.source_type != SourceType.URL:
        raise BadRequest("Scheduled refresh applies to URL documents only.")
    before = document.refresh_interval_hours
    document.refresh_interval_hours = interval
    next_at = None
    if document.refresh_status != RefreshStatus.REFRESHING:
        next_at = next_refresh_time(document)
    with transaction.atomic():
        KnowledgeDocument.objects.filter(agent=agent, pk=document.pk).update(
            refresh_interval_hours=interval, next_refresh_at=next_at, updated_at=timezone.now()
        )
        if before != interval:
            _audit(
                agent,
                document,
                "document.schedule_changed",
                {"refresh_interval_hours": {"from": before, "to": interval}},
            )
    return document_get(agent=agent, document_id=document_id)
