"""An end user's thumbs down on a run that used retrieval reaches the Unanswered questions:
scores announces the run's feedback, knowledge listens (no import of scores' services)."""

import pytest
from django.urls import reverse

from apps.knowledge.gaps import selectors
from apps.knowledge.gaps.models import KnowledgeGap
from apps.scores.models import FEEDBACK_NAME, Score
from tests.knowledge.conftest import make_file_document
from tests.knowledge.gap_helpers import retrieval_step, sweep
from tests.scores.test_api_feedback import ORIGIN, _put, widget  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_thumbs_down_turns_a_runs_question_into_a_gap_and_a_thumbs_up_takes_it_back(
    widget,  # noqa: F811
    agent,
    make_api,
):
    document = make_file_document(agent, b"# Travel\n\nExpenses are paid back monthly.", "t.md")
    passage = {"document_id": document.pk, "title": "t.md", "passage": "x", "score": 0.9}
    writer = make_api(["activity:write"])
    step = retrieval_step("st_w", widget.run.id, "are travel expenses paid back", [passage])
    assert writer.post("/v1/ingest", json=[step]).status == 200
    sweep()
    assert not KnowledgeGap.objects.filter(agent=agent).exists()  # a good passage was found

    assert _put(widget, widget.answer.id, {"value": False}).status in (200, 201)
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    assert gap.representative == "are travel expenses paid back"
    assert (gap.question_count, gap.negative_feedback_count) == (1, 1)
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 1

    assert _put(widget, widget.answer.id, {"value": True}).status == 200  # changed their mind
    gap.refresh_from_db()
    assert (gap.question_count, gap.negative_feedback_count) == (0, 0)
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 0


def _disliked_gap(widget, agent, make_api):  # noqa: F811 - the fixture, imported
    """A run whose retrieval found a good passage, given a thumbs down: its question is a gap
    with negative feedback, its document's retrievals flagged."""
    document = make_file_document(agent, b"# Travel\n\nExpenses are paid back monthly.", "t.md")
    passage = {"document_id": document.pk, "title": "t.md", "passage": "x", "score": 0.9}
    writer = make_api(["activity:write"])
    step = retrieval_step("st_w", widget.run.id, "are travel expenses paid back", [passage])
    assert writer.post("/v1/ingest", json=[step]).status == 200
    assert _put(widget, widget.answer.id, {"value": False}).status in (200, 201)
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    assert (gap.question_count, gap.negative_feedback_count) == (1, 1)
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 1
    return gap, document


def test_deleting_the_thumbs_down_in_bulk_on_the_scores_page_takes_the_gap_back(
    widget,  # noqa: F811
    agent,
    make_api,
    member_client,
):
    gap, document = _disliked_gap(widget, agent, make_api)
    (feedback,) = Score.objects.filter(agent=agent, name=FEEDBACK_NAME)
    response = member_client.post(
        reverse("scores:score_bulk"), {"action": "delete", "ids": [feedback.id], "confirm": "1"}
    )
    assert response.status_code == 302
    assert not Score.objects.filter(agent=agent).exists()
    gap.refresh_from_db()
    assert (gap.question_count, gap.negative_feedback_count) == (0, 0)
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 0


def test_deleting_the_thumbs_down_over_the_api_takes_the_gap_back(
    widget,  # noqa: F811
    agent,
    make_api,
):
    gap, document = _disliked_gap(widget, agent, make_api)
    (feedback,) = Score.objects.filter(agent=agent, name=FEEDBACK_NAME)
    assert make_api(["scores:write"]).delete(f"/v1/scores/{feedback.id}").status == 204
    gap.refresh_from_db()
    assert (gap.question_count, gap.negative_feedback_count) == (0, 0)
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 0
