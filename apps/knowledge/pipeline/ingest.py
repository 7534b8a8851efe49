"""Ingest: a document's first extraction and indexing, or its failure."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.pipeline.claims import _release
from apps.knowledge.pipeline.producing import _claim_and_produce
from apps.knowledge.pipeline.versions import SEARCH_FIELDS, _sha256, _write_version
from apps.knowledge.services import enqueue_after_commit, next_refresh_time

Status = KnowledgeDocument.Status


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
