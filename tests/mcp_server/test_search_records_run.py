"""The MCP tool `search_knowledge` with a `run_id` records the search as that run's retrieval
step, exactly as POST /v1/knowledge/search does (one event, apps.knowledge.events), through the
real /mcp endpoint with an OAuth grant."""

from __future__ import annotations

import pytest

from apps.activity.models import RunStep
from tests.activity.factories import run_factory
from tests.knowledge.conftest import make_file_document
from tests.mcp_server.conftest import mcp_post

pytestmark = pytest.mark.django_db

HANDBOOK = b"# Handbook\n\n## Refunds\n\nRefunds are paid back within fourteen days.\n"


def _search(access_token: str, arguments: dict) -> dict:
    answer = mcp_post(
        access_token, "tools/call", {"name": "search_knowledge", "arguments": arguments}
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["result"]


def test_search_naming_a_run_is_recorded_as_its_retrieval_step(grant_for, owner, agent):
    document = make_file_document(agent, HANDBOOK, "handbook.md")
    run = run_factory(agent=agent)
    grant = grant_for(owner, agent, ["knowledge:read"])

    result = _search(grant.access_token, {"query": "refund", "mode": "keyword", "run_id": run.id})

    assert not result.get("isError"), result
    hits = result["structuredContent"]["data"]
    assert hits and hits[0]["document_id"] == document.pk
    step = RunStep.objects.get(agent=agent, run_id=run.id)
    assert step.kind == "retrieval"
    assert step.name == "knowledge search (keyword)"
    assert step.query == "refund"
    assert [passage["document_id"] for passage in step.documents] == [document.pk]
    run.refresh_from_db()
    assert run.document_ids == [document.pk]


def test_search_without_a_run_records_nothing(grant_for, owner, agent):
    make_file_document(agent, HANDBOOK, "handbook.md")
    grant = grant_for(owner, agent, ["knowledge:read"])
    result = _search(grant.access_token, {"query": "refund", "mode": "keyword"})
    assert not result.get("isError"), result
    assert result["structuredContent"]["data"]
    assert not RunStep.objects.exists()


def test_search_naming_an_unknown_run_is_a_tool_error_and_records_nothing(grant_for, owner, agent):
    make_file_document(agent, HANDBOOK, "handbook.md")
    grant = grant_for(owner, agent, ["knowledge:read"])
    result = _search(grant.access_token, {"query": "refund", "run_id": "run_missing"})
    assert result["isError"] is True
    assert "run_missing" in result["content"][0]["text"]
    assert not RunStep.objects.exists()
