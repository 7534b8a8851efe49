"""Writes of unanswered questions: the sweep that reads the retrieval steps activity recorded and
groups their questions (beat task `knowledge.gaps_sweep`), and the owner's resolve and reopen.

The sweep reads `activity.RunStep` rows (a rollup built from another app's rows, as
docs/architecture.md allows: read, never written) in the order of their row key, from where it
stopped. A row is read once it is KNOWLEDGE_GAPS_SETTLE_SECONDS old: recording inserts a batch's
steps inside one transaction, so a row key taken by a transaction that has not committed yet
could otherwise be passed over for good; rows are written inside requests that end in seconds.
Every write is idempotent (unique step per Agent, unique run and document), so a pass that
stopped half-way and runs again counts nothing twice.

Grouping embeds each distinct question once (the packaged model of apps.knowledge.embeddings)
and assigns it to the nearest group centroid (apps.knowledge.gaps.clustering); nothing is
recomputed when the page or the API reads the groups.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.activity.models import Run, RunStep, StepKind, StepStatus
from apps.knowledge.gaps import clustering
from apps.knowledge.gaps.models import (
    TEXT_LIMIT,
    KnowledgeDocumentRetrieval,
    KnowledgeGap,
    KnowledgeGapOccurrence,
    KnowledgeGapQuestion,
    KnowledgeGapSweep,
)
from apps.knowledge.gaps.vectors import question_vectors, vector_from_bytes, vector_to_bytes
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.relevance import DEFAULT_MIN_SCORE

logger = logging.getLogger(__name__)

# A search whose best passage scored under this (though at or above the threshold) left its
# question weakly answered: the calibrated relevance says it answers the question less likely
# than not (apps.knowledge.relevance).
LOW_SCORE = 0.5
# How long "how often a document was retrieved" looks back; older retrievals are pruned.
RETRIEVAL_DAYS = 30
# Steps read per transaction, occurrences grouped per transaction.
SCAN_BATCH = 2000
GROUP_BATCH = 500
PRUNE_BATCH = 5000


@dataclass
class SweepResult:
    steps: int = 0
    occurrences: int = 0
    retrievals: int = 0
    grouped: int = 0
    new_groups: int = 0
    reopened: int = 0
    pruned: int = 0
    busy: bool = False

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def gaps_sweep(*, budget_seconds: float = 20.0, now: datetime | None = None) -> SweepResult:
    """Read the retrieval steps recorded since the last pass, group the new unanswered
    questions, prune retrievals past RETRIEVAL_DAYS; stop starting new batches after
    `budget_seconds` (the next beat tick carries on)."""
    result = SweepResult()
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        read = _steps_read(result, now=now)
        if read is None:
            result.busy = True
            break
        if not read:
            break
    while time.monotonic() < deadline:
        grouped = _occurrences_group(result, now=now)
        if grouped is None:
            result.busy = True
            break
        if not grouped:
            break
    result.pruned = _retrievals_prune(now=now)
    return result


# --- reading the steps -----------------------------------------------------------------------


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


def _sweep_row(name: str) -> KnowledgeGapSweep | None:
    """The sweep's position, locked for this transaction; None when another pass holds it."""
    KnowledgeGapSweep.objects.get_or_create(name=name, defaults={"updated_at": timezone.now()})
    return KnowledgeGapSweep.objects.select_for_update(skip_locked=True).filter(name=name).first()


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


# --- grouping -------------------------------------------------------------------------------


def question_key(text: str) -> str:
    """What "the same question" means: the text lower-cased, its whitespace collapsed."""
    return hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()


@dataclass
class _Touched:
    """What one grouping batch adds to a group."""

    occurrences: list[KnowledgeGapOccurrence] = field(default_factory=list)
    new_distinct: int = 0


def _occurrences_group(result: SweepResult, *, now: datetime | None) -> int | None:
    """Group one batch of occurrences not grouped yet. Returns how many (0: none left), or None
    when another pass is grouping."""
    current = now or timezone.now()
    with transaction.atomic():
        if _sweep_row("groups") is None:
            return None
        pending = list(
            KnowledgeGapOccurrence.objects.filter(gap__isnull=True).order_by("id")[:GROUP_BATCH]
        )
        if not pending:
            return 0
        by_agent: dict[str, list[KnowledgeGapOccurrence]] = defaultdict(list)
        for occurrence in pending:
            by_agent[occurrence.agent_id].append(occurrence)
        for agent_id, occurrences in by_agent.items():
            _agent_group(agent_id, occurrences, result, now=current)
        result.grouped += len(pending)
        return len(pending)


def _agent_group(
    agent_id: str, occurrences: list[KnowledgeGapOccurrence], result: SweepResult, *, now: datetime
) -> None:
    """One Agent's batch: new wordings embedded and put in the nearest group (or a new one),
    then every asking added to its wording's group."""
    occurrences.sort(key=lambda item: (item.asked_at, item.id))
    keys = {occurrence.pk: question_key(occurrence.query) for occurrence in occurrences}
    questions = {
        question.key: question
        for question in KnowledgeGapQuestion.objects.filter(
            agent_id=agent_id, key__in=set(keys.values())
        ).only("id", "key", "gap_id", "count", "first_seen_at", "last_seen_at")
    }
    # Distinct texts never seen: embedded in batches, then assigned in the order first asked.
    fresh: dict[str, KnowledgeGapOccurrence] = {}
    for occurrence in occurrences:
        key = keys[occurrence.pk]
        if key not in questions and key not in fresh:
            fresh[key] = occurrence
    touched: dict[str, _Touched] = defaultdict(_Touched)
    centroids = clustering.Centroids()
    if fresh:
        _fresh_assign(agent_id, fresh, questions, centroids, touched, result, now=now)
    _occurrences_attach(occurrences, keys, questions, touched)
    for gap_id, added in touched.items():
        result.reopened += _gap_add(gap_id, added, vector_sum=_sum_of(centroids, gap_id), now=now)


def _fresh_assign(
    agent_id: str,
    fresh: dict[str, KnowledgeGapOccurrence],
    questions: dict[str, KnowledgeGapQuestion],
    centroids: clustering.Centroids,
    touched: dict[str, _Touched],
    result: SweepResult,
    *,
    now: datetime,
) -> None:
    """Embed the new wordings and give each a group: the nearest centroid or a new group."""
    vectors, thresholds = question_vectors([occurrence.query for occurrence in fresh.values()])
    for gap in KnowledgeGap.objects.filter(agent_id=agent_id).only("id", "vector_sum"):
        centroids.add_group(gap.pk, vector_from_bytes(gap.vector_sum))
    for (key, occurrence), vector, threshold in zip(
        fresh.items(), vectors, thresholds, strict=True
    ):
        row, new = centroids.assign(vector, threshold=threshold)
        if new:
            gap = KnowledgeGap.objects.create(
                agent_id=agent_id,
                representative=occurrence.query,
                vector_sum=vector_to_bytes(vector),
                first_seen_at=occurrence.asked_at,
                last_seen_at=occurrence.asked_at,
                created_at=now,
                updated_at=now,
            )
            centroids.keys[row] = gap.pk
            result.new_groups += 1
        gap_id = centroids.keys[row]
        assert gap_id is not None
        questions[key] = KnowledgeGapQuestion.objects.create(
            agent_id=agent_id,
            gap_id=gap_id,
            key=key,
            text=occurrence.query,
            vector=vector_to_bytes(vector),
            count=0,
            first_seen_at=occurrence.asked_at,
            last_seen_at=occurrence.asked_at,
        )
        touched[gap_id].new_distinct += 1


def _occurrences_attach(
    occurrences: list[KnowledgeGapOccurrence],
    keys: dict[int, str],
    questions: dict[str, KnowledgeGapQuestion],
    touched: dict[str, _Touched],
) -> None:
    """Every asking to its wording's group; the wordings' counts and times."""
    per_question: dict[str, list[KnowledgeGapOccurrence]] = defaultdict(list)
    for occurrence in occurrences:
        question = questions[keys[occurrence.pk]]
        occurrence.gap_id = question.gap_id
        per_question[question.key].append(occurrence)
        touched[question.gap_id].occurrences.append(occurrence)
    KnowledgeGapOccurrence.objects.bulk_update(occurrences, ["gap"])
    for key, asked in per_question.items():
        question = questions[key]
        KnowledgeGapQuestion.objects.filter(pk=question.pk).update(
            count=F("count") + len(asked),
            last_seen_at=max(max(item.asked_at for item in asked), question.last_seen_at),
            first_seen_at=min(min(item.asked_at for item in asked), question.first_seen_at),
        )


def _sum_of(centroids: clustering.Centroids, gap_id: str) -> np.ndarray | None:
    try:
        return centroids.sums[centroids.keys.index(gap_id)]
    except ValueError:  # a group only known questions went to: its centroid did not move
        return None


def _gap_add(gap_id: str, added: _Touched, *, vector_sum: np.ndarray | None, now: datetime) -> int:
    """Add a batch's occurrences to a group's totals; a resolved group asked again after it was
    resolved opens again. Returns 1 when it reopened."""
    gap = KnowledgeGap.objects.select_for_update().get(pk=gap_id)
    items = added.occurrences
    gap.question_count += len(items)
    gap.no_answer_count += sum(
        item.reason == KnowledgeGapOccurrence.Reason.NO_ANSWER for item in items
    )
    gap.negative_feedback_count += sum(item.negative_feedback for item in items)
    gap.distinct_count += added.new_distinct
    if items:
        gap.first_seen_at = min(gap.first_seen_at, *(item.asked_at for item in items))
        gap.last_seen_at = max(gap.last_seen_at, *(item.asked_at for item in items))
    scored = [item for item in items if item.best_score is not None]
    if scored:
        best = max(scored, key=lambda item: item.best_score or 0.0)
        if gap.best_score is None or (best.best_score or 0.0) > gap.best_score:
            gap.best_score = best.best_score
            gap.best_passage = best.best_passage
            gap.best_document_id = best.best_document_id
            gap.best_document_title = best.best_document_title
    elif gap.best_passage is None:
        unscored = next((item for item in items if item.best_passage), None)
        if unscored is not None:
            gap.best_passage = unscored.best_passage
            gap.best_document_id = unscored.best_document_id
            gap.best_document_title = unscored.best_document_title
    if vector_sum is not None:
        gap.vector_sum = vector_to_bytes(vector_sum)
    reopened = 0
    if gap.status == KnowledgeGap.Status.RESOLVED and any(
        gap.resolved_at is None or item.asked_at > gap.resolved_at for item in items
    ):
        gap.status = KnowledgeGap.Status.OPEN
        gap.reopened_at = now
        reopened = 1
    representative = (
        KnowledgeGapQuestion.objects.filter(gap_id=gap_id)
        .order_by("-count", "first_seen_at", "id")
        .values_list("text", flat=True)
        .first()
    )
    gap.representative = representative or gap.representative
    gap.updated_at = now
    gap.save()
    return reopened


def _retrievals_prune(*, now: datetime | None) -> int:
    """Delete document retrievals older than RETRIEVAL_DAYS, one bounded batch per pass."""
    cutoff = (now or timezone.now()) - timedelta(days=RETRIEVAL_DAYS)
    old = list(
        KnowledgeDocumentRetrieval.objects.filter(retrieved_at__lt=cutoff)
        .order_by("retrieved_at")
        .values_list("id", flat=True)[:PRUNE_BATCH]
    )
    if not old:
        return 0
    deleted, _ = KnowledgeDocumentRetrieval.objects.filter(id__in=old).delete()
    return deleted
