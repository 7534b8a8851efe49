"""An owner's decisions on a group of unanswered questions: resolved (a document now answers
it) or open again. Audited; the sweep (services.py) reopens a resolved group when asked again."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.common.errors import Conflict, NotFound
from apps.knowledge.gaps.models import KnowledgeGap
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Agent


def _gap_locked(*, agent: Agent, gap_id: str) -> KnowledgeGap:
    gap = KnowledgeGap.objects.select_for_update().filter(agent=agent, pk=gap_id).first()
    if gap is None:
        raise NotFound(f"No unanswered question group {gap_id} for this Agent.")
    return gap


def gap_resolve(*, agent: Agent, gap_id: str) -> KnowledgeGap:
    """Mark a group resolved (a document now answers it); Conflict when it already is. A
    question of the group asked after this opens it again (the sweep)."""
    return _gap_status_set(
        agent=agent,
        gap_id=gap_id,
        status=KnowledgeGap.Status.RESOLVED,
        stamp="resolved_at",
        conflict="This group of questions is already resolved.",
    )


def gap_reopen(*, agent: Agent, gap_id: str) -> KnowledgeGap:
    """Open a resolved group again by hand; Conflict when it is open."""
    return _gap_status_set(
        agent=agent,
        gap_id=gap_id,
        status=KnowledgeGap.Status.OPEN,
        stamp="reopened_at",
        conflict="This group of questions is open.",
    )


def _gap_status_set(
    *, agent: Agent, gap_id: str, status: str, stamp: str, conflict: str
) -> KnowledgeGap:
    """Move a group to `status`, stamping `stamp`, audited as knowledge_gap.<resolved|reopened>."""
    with transaction.atomic():
        gap = _gap_locked(agent=agent, gap_id=gap_id)
        if gap.status == status:
            raise Conflict(conflict)
        gap.status = status
        now = timezone.now()
        setattr(gap, stamp, now)
        gap.updated_at = now
        gap.save(update_fields=["status", stamp, "updated_at"])
        audit_record(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            action="knowledge_gap." + stamp.removesuffix("_at"),
            target_type="knowledge_gap",
            target_id=gap.pk,
            target_name=gap.representative[:200],
        )
    return gap
