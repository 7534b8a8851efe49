"""Deleting unanswered questions for the retention policy (apps.retention), in bounded batches.

The sweep keeps what end users asked: each asking (`KnowledgeGapOccurrence.query`), each distinct
wording (`KnowledgeGapQuestion.text`) and a group's representative wording. They are activity,
kept no longer than the workspace keeps activity: an asking older than the cut-off goes, a
wording last asked before it goes (out of its group's centroid too), and a group left without
wordings goes. A group that keeps some is counted again from what is left — askings, of which
nothing found and with negative feedback, wordings, first asked, its centroid and its
representative — so the page never shows a wording or a count the policy removed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import Count, Min, Q

from apps.knowledge.gaps.grouping import question_key
from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapOccurrence, KnowledgeGapQuestion
from apps.knowledge.gaps.vectors import vector_from_bytes, vector_to_bytes


@dataclass
class GapsPurged:
    askings: int = 0
    questions: int = 0
    groups: int = 0
    # Where the next batch of the same pass starts (the batches delete what they read, so a
    # pass needs no position; kept for apps.retention's drain loop).
    resume_at: datetime | None = None

    def __bool__(self) -> bool:
        return bool(self.askings or self.questions or self.groups)


def gaps_purge_batch(
    *,
    agent_id: str,
    before: datetime,
    batch_size: int = 1000,
    resume_at: datetime | None = None,
) -> GapsPurged:
    """Delete up to `batch_size` of the Agent's askings and wordings older than `before`, in one
    transaction, and count their groups again; false means nothing was left to delete."""
    result = GapsPurged()
    with transaction.atomic():
        askings = list(
            KnowledgeGapOccurrence.objects.filter(agent_id=agent_id, asked_at__lt=before)
            .order_by("asked_at", "id")
            .values_list("id", "gap_id", "query")[:batch_size]
        )
        questions = list(
            KnowledgeGapQuestion.objects.filter(agent_id=agent_id, last_seen_at__lt=before)
            .order_by("last_seen_at", "id")
            .values_list("id", "gap_id")[:batch_size]
        )
        if not askings and not questions:
            return result
        KnowledgeGapOccurrence.objects.filter(id__in=[row[0] for row in askings]).delete()
        KnowledgeGapQuestion.objects.filter(id__in=[row[0] for row in questions]).delete()
        _question_counts_lower(agent_id, Counter(question_key(row[2]) for row in askings))
        touched = {row[1] for row in askings} | {row[1] for row in questions}
        for gap_id in sorted(gap_id for gap_id in touched if gap_id is not None):
            result.groups += _gap_recount(gap_id)
        result.askings, result.questions = len(askings), len(questions)
    return result


def _question_counts_lower(agent_id: str, asked: Counter[str]) -> None:
    """The wordings still kept lose the askings that went."""
    by_times: dict[int, list[str]] = {}
    for key, times in asked.items():
        by_times.setdefault(times, []).append(key)
    for times, keys in by_times.items():
        for question in KnowledgeGapQuestion.objects.filter(agent_id=agent_id, key__in=keys):
            question.count = max(question.count - times, 0)
            question.save(update_fields=["count"])


def _gap_recount(gap_id: str) -> int:
    """Count a group again from its remaining askings and wordings; delete it when none of
    its wordings is left. Returns 1 when it was deleted."""
    gap = KnowledgeGap.objects.select_for_update().filter(pk=gap_id).first()
    if gap is None:
        return 0
    wordings = list(
        KnowledgeGapQuestion.objects.filter(gap_id=gap_id)
        .order_by("-count", "first_seen_at", "id")
        .values_list("text", "vector", "first_seen_at")
    )
    if not wordings:
        gap.delete()
        return 1
    totals = KnowledgeGapOccurrence.objects.filter(gap_id=gap_id).aggregate(
        asked=Count("id"),
        no_answer=Count("id", filter=Q(reason=KnowledgeGapOccurrence.Reason.NO_ANSWER)),
        negative=Count("id", filter=Q(negative_feedback=True)),
        first=Min("asked_at"),
    )
    vectors = np.stack([vector_from_bytes(vector) for _text, vector, _at in wordings])
    gap.vector_sum = vector_to_bytes(vectors.sum(axis=0).astype(np.float32))
    gap.representative = wordings[0][0]
    gap.distinct_count = len(wordings)
    gap.question_count = totals["asked"]
    gap.no_answer_count = totals["no_answer"]
    gap.negative_feedback_count = totals["negative"]
    gap.first_seen_at = totals["first"] or min(at for _text, _vector, at in wordings)
    gap.save(
        update_fields=[
            "vector_sum",
            "representative",
            "distinct_count",
            "question_count",
            "no_answer_count",
            "negative_feedback_count",
            "first_seen_at",
        ]
    )
    return 0
