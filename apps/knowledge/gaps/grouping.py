"""Grouping the unanswered askings: what "the same question" means, each new wording embedded
once and put in the nearest group (or a new one), and the groups' totals, a resolved group
asked again opening again."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.knowledge.gaps import clustering
from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapOccurrence, KnowledgeGapQuestion
from apps.knowledge.gaps.positions import SweepResult, _sweep_row
from apps.knowledge.gaps.vectors import question_vectors, vector_from_bytes, vector_to_bytes

# Occurrences grouped per transaction.
GROUP_BATCH = 500


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
