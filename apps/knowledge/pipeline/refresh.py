"""Refresh: fetching a URL document again and replacing its version only once the new one is
extracted and indexed; a failure keeps the previous content."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.knowledge import embedding_jobs
from apps.knowledge.models import KnowledgeContentVersion, KnowledgeDocument
from apps.knowledge.pipeline.claims import _release
from apps.knowledge.pipeline.producing import _claim_and_produce
from apps.knowledge.pipeline.versions import SEARCH_FIELDS, _sha256, _write_version
from apps.knowledge.search.fts import unindex_chunks
from apps.knowledge.services import enqueue_after_commit, next_refresh_time

Status = KnowledgeDocument.Status
RefreshStatus = KnowledgeDocument.RefreshStatus
SourceType = KnowledgeDocument.SourceType


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
