"""GET /v1/knowledge/gaps and one group's reads and actions: the `knowledge_gap` object's exact
keys, keyset pages, a status filter, 400 for any other parameter, and every refusal (another
Agent's group, another workspace's Agent, a key without the permission)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.knowledge.gaps.models import KnowledgeGap
from tests.knowledge.gap_helpers import ask, gap_factory, sweep

pytestmark = pytest.mark.django_db

GAP_KEYS = {
    "object", "id", "status", "representative_question", "question_count", "no_answer_count",
    "negative_feedback_count", "distinct_question_count", "first_seen_at", "last_seen_at",
    "best_passage", "example_conversations", "resolved_at", "reopened_at",
}  # fmt: skip


@pytest.fixture
def reader(make_api):
    return make_api(scopes=["knowledge:read"])


def test_a_group_is_served_with_exactly_its_fields(make_api, agent):
    writer = make_api(scopes=["activity:write"])
    passage = {"document_id": "doc_x", "title": "Prices", "passage": "Plans start at 9 EUR.",
               "score": 0.31}  # fmt: skip
    ask(writer, "run_0", "Do you offer a student discount?", [passage])
    ask(writer, "run_1", "discount for students")
    sweep()
    reader = make_api(scopes=["knowledge:read"])
    body = reader.get("/v1/knowledge/gaps").json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    (gap,) = body["data"]
    assert set(gap) == GAP_KEYS
    assert gap["object"] == "knowledge_gap" and gap["id"].startswith("gap_")
    assert gap["status"] == "open" and gap["question_count"] == 2
    assert gap["no_answer_count"] == 1 and gap["distinct_question_count"] == 2
    assert gap["best_passage"] == {"document_id": "doc_x", "document_name": "Prices",
                                   "passage": "Plans start at 9 EUR.", "score": 0.31}  # fmt: skip
    assert [example["conversation_id"] for example in gap["example_conversations"]] == [
        "conv_run_1",
        "conv_run_0",
    ]
    assert set(gap["example_conversations"][0]) == {"conversation_id", "run_id", "question",
                                                    "asked_at"}  # fmt: skip
    detail = reader.get(f"/v1/knowledge/gaps/{gap['id']}").json()
    assert set(detail) == GAP_KEYS | {"questions", "askings"}
    assert {question["question"] for question in detail["questions"]} == {
        "Do you offer a student discount?",
        "discount for students",
    }
    assert {asking["reason"] for asking in detail["askings"]} == {"no_answer", "low_score"}
    agent_form = reader.get(f"/v1/agents/{agent.pk}/knowledge/gaps/{gap['id']}")
    assert agent_form.status == 200 and agent_form.json() == detail


def test_the_list_pages_by_last_asked_and_filters_by_status(reader, agent):
    now = timezone.now()
    made = [
        gap_factory(agent, question=f"q{n}", last_seen_at=now - timedelta(minutes=n),
                    status="resolved" if n % 2 else "open")
        for n in range(5)
    ]  # fmt: skip
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"after": cursor} if cursor else {})}
        page = reader.get("/v1/knowledge/gaps", params=params).json()
        seen += [gap["id"] for gap in page["data"]]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert seen == [gap.pk for gap in made]
    resolved = reader.get("/v1/knowledge/gaps", params={"status": "resolved"}).json()["data"]
    assert [gap["id"] for gap in resolved] == [made[1].pk, made[3].pk]


@pytest.mark.parametrize(
    "query",
    ["status=closed", "limit=0", "limit=101", "after=nonsense", "sort=count", "q=refund",
     "status=open&status=resolved"],
)  # fmt: skip
def test_the_list_refuses_bad_and_unknown_parameters(reader, query):
    response = reader.get(f"/v1/knowledge/gaps?{query}")
    assert response.status == 400, response.body
    assert response.json()["name"] == "bad_request"


def test_resolve_then_reopen_and_their_conflicts(make_api, agent):
    writer = make_api(scopes=["knowledge:write", "knowledge:read"])
    gap = gap_factory(agent)
    resolved = writer.post(f"/v1/knowledge/gaps/{gap.pk}/resolve")
    assert resolved.status == 200 and resolved.json()["status"] == "resolved"
    assert resolved.json()["resolved_at"] is not None
    again = writer.post(f"/v1/knowledge/gaps/{gap.pk}/resolve")
    assert again.status == 409 and again.json()["name"] == "conflict"
    reopened = writer.post(f"/v1/knowledge/gaps/{gap.pk}/reopen")
    assert reopened.status == 200 and reopened.json()["status"] == "open"
    assert writer.post(f"/v1/knowledge/gaps/{gap.pk}/reopen").status == 409
    body = writer.post(f"/v1/knowledge/gaps/{gap.pk}/resolve", json={"note": "x"})
    assert body.status == 400
    assert KnowledgeGap.objects.get(pk=gap.pk).status == "open"


def test_another_agents_group_is_not_found_and_unchanged(make_api, agent, sibling_agent):
    mine = make_api(scopes=["knowledge:write", "knowledge:read"])
    theirs = gap_factory(sibling_agent)
    for method, path in [
        ("get", f"/v1/knowledge/gaps/{theirs.pk}"),
        ("post", f"/v1/knowledge/gaps/{theirs.pk}/resolve"),
        ("get", f"/v1/agents/{sibling_agent.pk}/knowledge/gaps"),
        ("post", f"/v1/agents/{sibling_agent.pk}/knowledge/gaps/{theirs.pk}/resolve"),
    ]:
        response = getattr(mine, method)(path)
        assert response.status == 404, (path, response.body)
        assert response.json()["name"] == "not_found"
    assert mine.get("/v1/knowledge/gaps").json()["data"] == []
    assert KnowledgeGap.objects.get(pk=theirs.pk).status == "open"


def test_another_workspaces_agent_is_not_found(reader, other_agent):
    gap = gap_factory(other_agent)
    assert reader.get(f"/v1/agents/{other_agent.pk}/knowledge/gaps").status == 404
    assert reader.get(f"/v1/knowledge/gaps/{gap.pk}").status == 404


def test_a_key_without_the_permission_is_refused_and_changes_nothing(make_api, agent):
    gap = gap_factory(agent)
    read_only = make_api(scopes=["knowledge:read"])
    refused = read_only.post(f"/v1/knowledge/gaps/{gap.pk}/resolve")
    assert refused.status == 403 and refused.json()["name"] == "insufficient_scope"
    assert 'scope="knowledge:write"' in refused.headers["WWW-Authenticate"]
    no_read = make_api(scopes=["runs:read"])
    assert no_read.get("/v1/knowledge/gaps").status == 403
    assert KnowledgeGap.objects.get(pk=gap.pk).status == "open"


def test_the_operations_are_in_the_openapi_document(anonymous_api):
    document = anonymous_api.get("/v1/openapi.json").json()
    assert document["paths"]["/v1/knowledge/gaps"]["get"]["x-required-scope"] == "knowledge:read"
    assert "/v1/knowledge/gaps/{id}/resolve" in document["paths"]
    names = {p["name"] for p in document["paths"]["/v1/knowledge/gaps"]["get"]["parameters"]}
    assert names == {"limit", "after", "status"}
    assert "KnowledgeGap" in document["components"]["schemas"]
