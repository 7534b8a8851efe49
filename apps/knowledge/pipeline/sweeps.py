"""The two beat sweepers: queueing the due refreshes, and queueing again the work of documents
whose worker died or whose task was lost."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.pipeline.claims import queue_grace
from apps.knowledge.services import enqueue_after_commit
from apps.workspaces.models import Agent

Status = KnowledgeDocument.Status
RefreshStatus = KnowledgeDocument.RefreshStatus
SourceType = KnowledgeDocument.SourceType


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
