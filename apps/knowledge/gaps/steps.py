"""Reading the retrieval steps: which left their question unanswered and why, and what the
sweep keeps of them (the unanswered askings, each document a run retrieved), from where it
stopped."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.activity.models import Run, RunStep, StepKind, StepStatus
from apps.knowledge.gaps.models import (
    TEXT_LIMIT,
    KnowledgeDocumentRetrieval,
    KnowledgeGapOccurrence,
)
from apps.knowledge.gaps.positions import SweepResult, _sweep_row
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.relevance import DEFAULT_MIN_SCORE

# A search whose best passage scored under this (though at or above the threshold) left its
# question weakly answered: the calibrated relevance says it answers the question less likely
# than not (apps.knowledge.relevance).
LOW_SCORE = 0.5


# Steps read per transaction.
SCAN_BATCH = 2000


def gap_reason(documents: Any) -> tuple[str | None, dict | None]:
    """Why a retrieval step's search left its question unanswered ("no_answer": nothing at or
    above the threshold; "low_score": its best passage under LOW_SCORE), or None; and its best
    passage. Passages without a score (a runtime's own retriever may send none) cannot be
    judged: such a step counts only when it returned nothing."""
    passages = (
        [item for item in documents if isinstance(item, dict)]
        if isinstance(documents, list)
        else []
    )
    scored = [item for item in passages if isinstance(item.get("score"), int | float)]
    best = (
        max(scored, key=lambda item: item["score"])
        if scored
        else (passages[0] if passages else None)
    )
    if not passages:
        return "no_answer", None
    if not scored:
        return None, best
    top = float(best["score"]) if best else 0.0
    if top < DEFAULT_MIN_SCORE:
        return "no_answer", best
    if top < LOW_SCORE:
        return "low_score", best
    return None, best


def _steps_read(result: SweepResult, *, now: datetime | None) -> int | None:
    """One batch of steps: occurrences and document retrievals written, position moved.
    Returns the rows passed (0: caught up), or None when another pass holds the position."""
    current = now or timezone.now()
    settled = current - timedelta(seconds=settings.KNOWLEDGE_GAPS_SETTLE_SECONDS)
    with transaction.atomic():
        sweep = _sweep_row("steps")
        if sweep is None:
            return None
        upper = sweep.last_row
        for row, created_at in (
            RunStep.objects.filter(row__gt=sweep.last_row)
            .order_by("row")
            .values_list("row", "created_at")[:SCAN_BATCH]
        ):
            if created_at > settled:
                break
            upper = row
        if upper == sweep.last_row:
            return 0
        steps = list(
            RunStep.objects.filter(row__gt=sweep.last_row, row__lte=upper, kind=StepKind.RETRIEVAL)
            .exclude(status=StepStatus.FAILED)
            .values("agent_id", "id", "run_id", "query", "documents", "started_at")
        )
        by_agent: dict[str, list[Any]] = defaultdict(list)
        for step in steps:
            by_agent[step["agent_id"]].append(step)
        for agent_id, agent_steps in by_agent.items():
            agent_steps_keep(agent_id, agent_steps, result)
        result.steps += len(steps)
        passed = upper - sweep.last_row
        sweep.last_row = upper
        sweep.updated_at = current
        sweep.save(update_fields=["last_row", "updated_at"])
        return passed


def agent_steps_keep(
    agent_id: str, steps: list[Any], result: SweepResult, *, disliked: frozenset[str] = frozenset()
) -> None:
    """Keep one Agent's retrieval steps: each (run, document of the Agent) they returned, and
    each step that left its question unanswered, or whose run is among `disliked` (runs an end
    user gave a thumbs down, apps.knowledge.gaps.feedback)."""
    run_ids = {step["run_id"] for step in steps}
    conversations = dict(
        Run.objects.filter(agent_id=agent_id, id__in=run_ids).values_list("id", "conversation_id")
    )
    named = {
        item.get("document_id")
        for step in steps
        if isinstance(step["documents"], list)
        for item in step["documents"]
        if isinstance(item, dict) and isinstance(item.get("document_id"), str)
    }
    known = (
        set(
            KnowledgeDocument.objects.filter(agent_id=agent_id, pk__in=named).values_list(
                "pk", flat=True
            )
        )
        if named
        else set()
    )
    occurrences = []
    retrievals = []
    for step in steps:
        documents = step["documents"] if isinstance(step["documents"], list) else []
        for document_id in dict.fromkeys(
            item.get("document_id") for item in documents if isinstance(item, dict)
        ):
            if document_id in known:
                retrievals.append(
                    KnowledgeDocumentRetrieval(
                        agent_id=agent_id,
                        document_id=document_id,
                        run_id=step["run_id"],
                        retrieved_at=step["started_at"],
                        negative_feedback=step["run_id"] in disliked,
                    )
                )
        query = (step["query"] or "").strip()
        if not query:
            continue
        reason, best = gap_reason(documents)
        negative = step["run_id"] in disliked
        if reason is None and not negative:
            continue
        occurrences.append(
            _occurrence(
                agent_id=agent_id,
                step=step,
                conversation_id=conversations.get(step["run_id"]),
                reason=reason or KnowledgeGapOccurrence.Reason.NEGATIVE_FEEDBACK,
                best=best,
                negative_feedback=negative,
            )
        )
    KnowledgeDocumentRetrieval.objects.bulk_create(retrievals, ignore_conflicts=True)
    KnowledgeGapOccurrence.objects.bulk_create(occurrences, ignore_conflicts=True)
    result.retrievals += len(retrievals)
    result.occurrences += len(occurrences)


def _occurrence(
    *,
    agent_id: str,
    step: dict,
    conversation_id: str | None,
    reason: str,
    best: dict | None,
    negative_feedback: bool = False,
) -> KnowledgeGapOccurrence:
    score = best.get("score") if best else None
    return KnowledgeGapOccurrence(
        agent_id=agent_id,
        step_id=step["id"],
        run_id=step["run_id"],
        conversation_id=conversation_id,
        query=step["query"].strip()[:TEXT_LIMIT],
        reason=reason,
        negative_feedback=negative_feedback,
        best_score=float(score) if isinstance(score, int | float) else None,
        best_passage=_text(best.get("passage")) if best else None,
        best_document_id=_text(best.get("document_id"), 64) if best else None,
        best_document_title=_text(best.get("title"), 255) if best else None,
        asked_at=step["started_at"],
    )


def _text(value: Any, limit: int = TEXT_LIMIT) -> str | None:
    return str(value)[:limit] if value is not None else None
