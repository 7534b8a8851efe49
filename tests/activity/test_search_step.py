"""A knowledge search that names its run is recorded by the service as the run's retrieval
step, with the passages it returned (knowledge announces, activity records)."""

import re

import pytest

from apps.activity.models import Run, RunStep
from tests.activity.test_services_recording import base_records
from tests.knowledge.conftest import make_file_document

pytestmark = pytest.mark.django_db

HANDBOOK = b"""# Employee handbook
## Expenses
Travel expenses are reimbursed within ten working days of a claim.
## Security
Never share your badge.
"""


def test_a_search_naming_its_run_becomes_the_runs_retrieval_step(make_api, agent, client, owner):
    writer = make_api(scopes=["activity:write", "knowledge:read", "runs:read"])
    assert writer.post("/v1/ingest", json=base_records()).status == 200
    document = make_file_document(agent, HANDBOOK, "handbook.md")

    plain = writer.post("/v1/knowledge/search", json={"query": "reimbursed expenses"})
    assert plain.status == 200 and not RunStep.objects.exists()  # no run named: nothing kept

    body = {"query": "reimbursed expenses", "run_id": "run_1"}
    response = writer.post("/v1/knowledge/search", json=body)
    assert response.status == 200
    hits = response.json()["data"]
    assert hits and hits[0]["document_id"] == document.pk
    by_header = writer.post(
        "/v1/knowledge/search", json={"query": "badge"}, headers={"X-Run-Id": "run_1"}
    )
    assert by_header.status == 200

    steps = writer.get("/v1/runs/run_1/steps").json()["data"]
    assert [step["kind"] for step in steps] == ["retrieval", "retrieval"]
    first = steps[0]
    assert first["query"] == "reimbursed expenses"
    assert first["documents"][0]["document_id"] == document.pk
    assert first["documents"][0]["title"] == "handbook.md"
    assert "reimbursed" in first["documents"][0]["passage"]
    assert "<mark>" not in first["documents"][0]["passage"]
    assert first["documents"][0]["score"] == hits[0]["score"]

    # The run page's retrieval step links the passage to the document's page.
    client.force_login(owner)
    page = client.get(f"/runs/run_1/steps/{first['id']}/").content.decode()
    assert f'href="/knowledge/{document.pk}/"' in page


def test_a_search_naming_an_unknown_run_is_a_400(make_api, agent):
    client = make_api(scopes=["activity:write", "knowledge:read"])
    response = client.post("/v1/knowledge/search", json={"query": "x", "run_id": "run_nope"})
    assert response.status == 400
    assert response.json()["message"] == "body.run_id: no run 'run_nope' recorded for this Agent."
    assert not Run.objects.exists() and not RunStep.objects.exists()


def test_runs_filter_by_the_document_they_retrieved_and_its_page_counts_them(
    make_api, agent, client, owner
):
    writer = make_api(scopes=["activity:write", "knowledge:read", "runs:read"])
    records = [
        *base_records(),
        {"type": "run", "id": "run_2", "conversation_id": "conv_1", "request_id": "r2",
         "sdk_version": "5"},
    ]  # fmt: skip
    assert writer.post("/v1/ingest", json=records).status == 200
    handbook = make_file_document(agent, HANDBOOK, "handbook.md")
    other = make_file_document(agent, b"# Other\n\nNothing about badges.\n", "other.md")
    body = {"query": "reimbursed", "run_id": "run_2", "mode": "keyword"}
    assert writer.post("/v1/knowledge/search", json=body).status == 200

    def ids(document_id):
        response = writer.get("/v1/runs", params={"document_id": document_id})
        assert response.status == 200, response.body
        return [run["id"] for run in response.json()["data"]]

    assert ids(handbook.pk) == ["run_2"]
    assert ids(other.pk) == []
    assert Run.objects.get(id="run_2").document_ids == [handbook.pk]

    client.force_login(owner)
    page = client.get(f"/knowledge/{handbook.pk}/").content.decode()
    counts = re.search(r'<dd id="document-runs">(.*?)</dd>', page, re.S)
    assert counts is not None
    assert "1 in the last 7 days" in counts.group(1) and "1 in 30 days" in counts.group(1)
    assert f"/runs/?document_id={handbook.pk}" in counts.group(1)
    listed = client.get(f"/runs/?document_id={handbook.pk}").content.decode()
    assert 'href="/runs/run_2/"' in listed and 'href="/runs/run_1/"' not in listed


def test_a_source_document_part_links_to_our_document(agent, other_agent, client, owner):
    from tests.activity.factories import conversation_factory, message_factory

    ours = make_file_document(agent, HANDBOOK, "handbook.md")
    theirs = make_file_document(other_agent, HANDBOOK, "theirs.md")
    conversation = conversation_factory(agent=agent, id="conv_src")
    message_factory(
        conversation=conversation, role="assistant",
        parts=[
            {"type": "source-document", "sourceId": ours.pk, "mediaType": "text/markdown",
             "title": "Handbook"},
            {"type": "source-document", "sourceId": theirs.pk, "mediaType": "text/markdown",
             "title": "Not ours"},
        ],
    )  # fmt: skip
    client.force_login(owner)
    html = client.get("/conversations/conv_src/").content.decode()
    assert f'<a class="source-document" href="/knowledge/{ours.pk}/">Handbook</a>' in html
    assert f"/knowledge/{theirs.pk}/" not in html and "Not ours" in html
