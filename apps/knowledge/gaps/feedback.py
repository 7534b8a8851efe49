"""End users' negative feedback on runs that used retrieval: the one place it comes in.

apps/scores records an end user's thumbs on a message, with its run, and announces
`RunFeedbackChanged` (whether the run now has any thumbs down) when one is given, changed or
withdrawn; `KnowledgeConfig.ready()` listens and calls `runs_feedback_record` below.

That is all: the gaps (the runs' questions join the Unanswered questions page, counted in each
group's `negative_feedback_count`) and the document page's share of retrieving runs with
negative feedback both follow from this call. Runs disliked before the wiring can be fed once
the same way from a shell (every run id with a thumbs down, per Agent).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from apps.activity.models import RunStep, StepKind, StepStatus
from apps.knowledge.gaps.models import (
    KnowledgeDocumentRetrieval,
    KnowledgeGap,
    KnowledgeGapOccurrence,
)
from apps.knowledge.gaps.positions import SweepResult
from apps.knowledge.gaps.steps import agent_steps_keep


def runs_feedback_record(*, agent_id: str, run_ids: set[str], negative: bool = True) -> int:
    """The runs `run_ids` of the Agent got a thumbs down (`negative`), or it was taken back.

    Negative: their retrieval steps are kept as unanswered questions (reason
    `negative_feedback` unless their search already left them unanswered; the next sweep
    groups them) and their document retrievals are flagged, whether or not the sweep had read
    those steps yet. Taken back: the flags are cleared, and a question kept only for the
    feedback leaves its group. Idempotent; returns the retrieval steps concerned.
    """
    if not run_ids:
        return 0
    with transaction.atomic():
        steps = list(
            RunStep.objects.filter(agent_id=agent_id, run_id__in=run_ids, kind=StepKind.RETRIEVAL)
            .exclude(status=StepStatus.FAILED)
            .values("agent_id", "id", "run_id", "query", "documents", "started_at")
        )
        if negative:
            agent_steps_keep(agent_id, steps, SweepResult(), disliked=frozenset(run_ids))
        _flags_set(agent_id=agent_id, run_ids=run_ids, negative=negative)
    return len(steps)


def _flags_set(*, agent_id: str, run_ids: set[str], negative: bool) -> None:
    KnowledgeDocumentRetrieval.objects.filter(agent_id=agent_id, run_id__in=run_ids).update(
        negative_feedback=negative
    )
    changing = KnowledgeGapOccurrence.objects.filter(
        agent_id=agent_id, run_id__in=run_ids, negative_feedback=not negative
    )
    step = 1 if negative else -1
    for occurrence in changing.select_for_update():
        gone = not negative and occurrence.reason == KnowledgeGapOccurrence.Reason.NEGATIVE_FEEDBACK
        if occurrence.gap_id is not None:
            KnowledgeGap.objects.filter(pk=occurrence.gap_id).update(
                negative_feedback_count=F("negative_feedback_count") + step,
                question_count=F("question_count") - (1 if gone else 0),
            )
        if gone:
            occurrence.delete()
        else:
            occurrence.negative_feedback = negative
            occurrence.save(update_fields=["negative_feedback"])
