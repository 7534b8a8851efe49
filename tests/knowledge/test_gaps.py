"""Unanswered questions (apps.knowledge.gaps): the sweep reads the retrieval steps every
recording path writes, keeps the ones whose search found nothing good enough, groups their
questions by meaning with the packaged model, and counts each document's retrievals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.activity.models import RunStep
from apps.knowledge.gaps import feedback, resolution, selectors, services, steps
from apps.knowledge.gaps.models import (
    KnowledgeDocumentRetrieval,
    KnowledgeGap,
    KnowledgeGapOccurrence,
)
from apps.knowledge.gaps.services import gaps_sweep
from apps.knowledge.gaps.steps import gap_reason
from tests.knowledge.conftest import make_file_document
from tests.knowledge.gap_helpers import ask, otlp_retrieval, sweep

pytestmark = pytest.mark.django_db

HANDBOOK = b"""# Employee handbook
## Expenses
Travel expenses are reimbursed within ten working days of a claim.
## Security
Never share your badge with anyone.
"""


@pytest.fixture
def writer(make_api):
    return make_api(scopes=["activity:write", "knowledge:read", "runs:read"])


@pytest.mark.parametrize(
    ("documents", "reason"),
    [
        ([], "no_answer"),
        ([{"passage": "x", "score": 0.1}], "no_answer"),
        ([{"passage": "x", "score": 0.35}, {"passage": "y", "score": 0.05}], "low_score"),
        ([{"passage": "x", "score": 0.8}], None),
        ([{"passage": "x"}], None),  # a runtime's passage without a score: cannot be judged
        ("not a list", "no_answer"),
    ],
)
def test_a_step_is_unanswered_when_nothing_passes_the_threshold_or_the_best_scores_low(
    documents, reason
):
    assert gap_reason(documents)[0] == reason


def test_paraphrases_join_one_group_and_other_needs_their_own(writer, agent):
    questions = [
        "How do I cancel my subscription?",
        "I want to stop my plan and not be charged anymore",
        "cancel account subscription",
        "Can I bring my dog?",
        "Are pets allowed in the rooms?",
        "What is the API rate limit?",
    ]
    for number, question in enumerate(questions):
        ask(writer, f"run_{number}", question)
    result = sweep()
    assert result.steps == 6 and result.occurrences == 6 and result.grouped == 6
    groups = {
        frozenset(gap.questions.values_list("text", flat=True))
        for gap in KnowledgeGap.objects.filter(agent=agent)
    }
    assert groups == {
        frozenset(questions[:3]),
        frozenset(questions[3:5]),
        frozenset(questions[5:]),
    }
    cancel = KnowledgeGap.objects.get(agent=agent, questions__text=questions[0])
    assert cancel.question_count == 3 and cancel.no_answer_count == 3
    assert cancel.distinct_count == 3 and cancel.status == "open"


def test_every_recording_path_feeds_the_sweep(writer, agent):
    document = make_file_document(agent, HANDBOOK, "handbook.md")
    ask(writer, "run_ingest", "Do you offer a student discount?")
    # A search naming its run (the MCP tool's search_knowledge goes through the same call).
    ask(writer, "run_search", "placeholder", [])
    RunStep.objects.filter(id="st_run_search").delete()
    found = writer.post(
        "/v1/knowledge/search", json={"query": "parking for visitors", "run_id": "run_search"}
    )
    assert found.status == 200 and found.json()["data"] == []
    otlp_retrieval(
        writer,
        trace="1" * 32,
        query="Is there a student discount?",
        documents=[{"id": document.pk, "title": "handbook.md", "content": "x", "score": 0.3}],
    )
    sweep()
    asked = set(KnowledgeGapOccurrence.objects.filter(agent=agent).values_list("query", "reason"))
    assert asked == {
        ("Do you offer a student discount?", "no_answer"),
        ("parking for visitors", "no_answer"),
        ("Is there a student discount?", "low_score"),
    }
    student = KnowledgeGap.objects.get(agent=agent, questions__text="Is there a student discount?")
    assert student.question_count == 2
    assert student.best_score == 0.3 and student.best_document_id == document.pk
    assert KnowledgeDocumentRetrieval.objects.filter(document_id=document.pk).count() == 1


def test_an_answered_question_is_no_gap_but_counts_as_a_retrieval(writer, agent):
    document = make_file_document(agent, HANDBOOK, "handbook.md")
    ask(writer, "run_0", "placeholder", [])
    RunStep.objects.filter(id="st_run_0").delete()
    hits = writer.post(
        "/v1/knowledge/search", json={"query": "travel expenses reimbursed", "run_id": "run_0"}
    ).json()["data"]
    assert hits and hits[0]["score"] >= steps.LOW_SCORE
    sweep()
    assert not KnowledgeGapOccurrence.objects.exists()
    counts = selectors.document_retrieval_counts(agent=agent, document_ids=[document.pk])
    assert counts == {document.pk: 1}


def test_steps_are_read_once_settled_and_never_twice(writer, agent, settings):
    settings.KNOWLEDGE_GAPS_SETTLE_SECONDS = 60
    ask(writer, "run_0", "Where can I find my invoices?")
    assert gaps_sweep().steps == 0  # just written: its transaction might not be the last
    assert sweep().steps == 1
    assert sweep().steps == 0
    ask(writer, "run_1", "get copies of past invoices")
    assert sweep().occurrences == 1
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    assert gap.question_count == 2


def test_the_same_question_is_embedded_once_and_the_most_asked_represents_the_group(writer, agent):
    ask(writer, "run_0", "business hours")
    for number in range(1, 4):
        ask(writer, f"run_{number}", "When are you open?")
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    assert gap.question_count == 4 and gap.distinct_count == 2
    assert gap.representative == "When are you open?"
    assert dict(gap.questions.values_list("text", "count")) == {
        "business hours": 1,
        "When are you open?": 3,
    }


def test_a_resolved_group_asked_again_opens_again(writer, agent):
    ask(writer, "run_0", "Is my laptop still under guarantee after 18 months?")
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    resolution.gap_resolve(agent=agent, gap_id=gap.pk)
    gap.refresh_from_db()
    assert gap.status == "resolved" and gap.resolved_at is not None
    later = (timezone.now() + timedelta(minutes=1)).isoformat()
    ask(writer, "run_1", "How long is the warranty on your products?", at=later)
    result = sweep()
    assert result.reopened == 1
    gap.refresh_from_db()
    assert gap.status == "open" and gap.reopened_at is not None and gap.question_count == 2


def test_resolving_twice_is_a_conflict_and_another_agents_group_is_not_found(
    writer, agent, other_agent
):
    from apps.common.errors import Conflict, NotFound

    ask(writer, "run_0", "pet policy")
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    resolution.gap_resolve(agent=agent, gap_id=gap.pk)
    with pytest.raises(Conflict):
        resolution.gap_resolve(agent=agent, gap_id=gap.pk)
    with pytest.raises(NotFound):
        resolution.gap_reopen(agent=other_agent, gap_id=gap.pk)
    gap.refresh_from_db()
    assert gap.status == "resolved"


def test_groups_are_per_agent(writer, agent, make_api, other_agent):
    ask(writer, "run_0", "Can I bring my dog?")
    ask(
        make_api(["activity:write"], for_agent=other_agent, created_by=None),
        "run_0",
        "Can I bring my dog?",
    )
    sweep()
    assert KnowledgeGap.objects.filter(agent=agent).count() == 1
    assert KnowledgeGap.objects.filter(agent=other_agent).count() == 1


def test_document_retrievals_and_never_retrieved_documents(writer, agent):
    used = make_file_document(agent, HANDBOOK, "handbook.md")
    unused = make_file_document(agent, b"# Parking\nVisitors park in lot B.\n", "parking.md")
    passage = {"document_id": used.pk, "title": "handbook.md", "passage": "x", "score": 0.9}
    for number in range(3):
        ask(writer, f"run_{number}", "travel expenses", [passage, passage])
    sweep()
    summary = selectors.document_retrievals(agent=agent, document_id=used.pk)
    assert (summary.runs, summary.negative, summary.negative_share) == (3, 0, 0.0)
    never = selectors.documents_by_retrieval(
        KnowledgeDocument_objects(agent), agent=agent, retrieved=False
    )
    assert list(never.values_list("pk", flat=True)) == [unused.pk]
    # Past RETRIEVAL_DAYS a retrieval no longer counts, and the sweep prunes it.
    KnowledgeDocumentRetrieval.objects.update(
        retrieved_at=timezone.now() - timedelta(days=services.RETRIEVAL_DAYS + 1)
    )
    assert selectors.document_retrievals(agent=agent, document_id=used.pk).runs == 0
    assert sweep().pruned == 3


def KnowledgeDocument_objects(agent):
    from apps.knowledge.models import KnowledgeDocument

    return KnowledgeDocument.objects.filter(agent=agent)


def test_negative_feedback_keeps_a_runs_questions_and_flags_its_documents(writer, agent):
    document = make_file_document(agent, HANDBOOK, "handbook.md")
    passage = {"document_id": document.pk, "title": "handbook.md", "passage": "x", "score": 0.9}
    ask(writer, "run_good", "travel expenses", [passage])
    ask(writer, "run_bad", "are travel expenses paid back", [passage])
    sweep()
    assert not KnowledgeGapOccurrence.objects.exists()  # both found a good passage

    feedback.runs_feedback_record(agent_id=agent.pk, run_ids={"run_bad"})
    feedback.runs_feedback_record(agent_id=agent.pk, run_ids={"run_bad"})  # idempotent
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    assert gap.representative == "are travel expenses paid back"
    assert (gap.question_count, gap.negative_feedback_count, gap.no_answer_count) == (1, 1, 0)
    summary = selectors.document_retrievals(agent=agent, document_id=document.pk)
    assert (summary.runs, summary.negative, summary.negative_share) == (2, 1, 0.5)

    feedback.runs_feedback_record(agent_id=agent.pk, run_ids={"run_bad"}, negative=False)
    gap.refresh_from_db()
    assert (gap.question_count, gap.negative_feedback_count) == (0, 0)
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 0


def test_feedback_before_the_sweep_read_the_steps_is_not_lost(writer, agent):
    document = make_file_document(agent, HANDBOOK, "handbook.md")
    passage = {"document_id": document.pk, "title": "handbook.md", "passage": "x", "score": 0.3}
    ask(writer, "run_bad", "mileage allowance", [passage])
    feedback.runs_feedback_record(agent_id=agent.pk, run_ids={"run_bad"})
    sweep()
    (occurrence,) = KnowledgeGapOccurrence.objects.all()
    assert occurrence.negative_feedback and occurrence.gap is not None
    assert occurrence.gap.negative_feedback_count == 1
    assert selectors.document_retrievals(agent=agent, document_id=document.pk).negative == 1
