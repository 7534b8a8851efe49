"""The questions end users asked that the knowledge could not answer expire with the workspace's
activity: the retention task (apps.retention.tasks.apply, as beat runs it) deletes askings older
than the cut-off, wordings last asked before it and groups left empty, and counts the rest again
(apps.knowledge.gaps.retention)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapOccurrence, KnowledgeGapQuestion
from apps.retention import tasks
from apps.retention.services import retention_policy_set
from apps.workspaces.models import AuditEvent
from tests.knowledge.gap_helpers import ask, sweep

pytestmark = pytest.mark.django_db

TRAVEL = "how do I claim travel expenses"
PARKING = "where may visitors park their car"


def _texts(agent) -> set[str]:
    """Every stored text of the Agent's unanswered questions."""
    return (
        set(KnowledgeGapOccurrence.objects.filter(agent=agent).values_list("query", flat=True))
        | set(KnowledgeGapQuestion.objects.filter(agent=agent).values_list("text", flat=True))
        | set(KnowledgeGap.objects.filter(agent=agent).values_list("representative", flat=True))
    )


def test_the_retention_task_purges_expired_questions_and_recounts_the_rest(
    agent, other_agent, workspace, make_api
):
    long_ago = (timezone.now() - timedelta(days=40)).isoformat()
    writer = make_api(["activity:write"])
    ask(writer, "run_t_old", TRAVEL, at=long_ago)
    ask(writer, "run_t_new", TRAVEL)  # asked again this week: the wording stays
    ask(writer, "run_p_old", PARKING, at=long_ago)  # only long ago: everything of it goes
    ask(make_api(["activity:write"], for_agent=other_agent), "run_x_old", PARKING, at=long_ago)
    sweep()
    assert {gap.representative for gap in KnowledgeGap.objects.filter(agent=agent)} == {
        TRAVEL,
        PARKING,
    }
    retention_policy_set(workspace=workspace, activity_days=30)

    assert tasks.apply.apply().get() == "done"

    assert _texts(agent) == {TRAVEL}
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    assert (gap.question_count, gap.no_answer_count, gap.distinct_count) == (1, 1, 1)
    assert gap.first_seen_at > timezone.now() - timedelta(days=1)
    (question,) = KnowledgeGapQuestion.objects.filter(agent=agent)
    assert question.count == 1
    (asking,) = KnowledgeGapOccurrence.objects.filter(agent=agent)
    assert asking.run_id == "run_t_new"
    assert PARKING in _texts(other_agent), "another workspace's policy was applied"
    entry = AuditEvent.objects.get(workspace=workspace, action="retention.activity_purged")
    assert entry.changes["unanswered_questions"] == 2
