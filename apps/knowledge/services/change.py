"""Changes to existing documents: rename, enable or disable, delete, refresh, retry, schedule."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from apps.knowledge.search.fts import unindex_chunks
from apps.knowledge.selectors import document_get
from apps.knowledge.services.common import (
    RefreshStatus,
    SourceType,
    Status,
    audit,
    check_interval,
    check_name,
    delete_stored_files,
    enqueue_after_commit,
    next_refresh_time,
)
from apps.workspaces.audit import audit_diff
from apps.workspaces.models import Agent


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
        changes["name"] = check_name(name)
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
            audit(agent, document, _update_action(diff), diff)
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
        audit(
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
        transaction.on_commit(lambda: delete_stored_files(document))


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
            audit(agent, document, "document.refresh_requested")
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
            audit(agent, document, "document.retried")
            enqueue_after_commit("ingest", document.pk)
    if not retried:
        raise Conflict("Only a failed document can be retried.")
    return document_get(agent=agent, document_id=document_id)


def document_schedule(
    *, agent: Agent, document_id: str, refresh_interval_hours: int
) -> KnowledgeDocument:
    """Set how often a URL document is refreshed; 0 turns scheduled refreshes off."""
    interval = check_interval(refresh_interval_hours)
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
            audit(
                agent,
                document,
                "document.schedule_changed",
                {"refresh_interval_hours": {"from": before, "to": interval}},
            )
    return document_get(agent=agent, document_id=document_id)
