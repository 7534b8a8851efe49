"""POST /v1/ingest: an extension with its own opt-in scope, all-or-nothing, 400s naming fields."""

import pytest

from apps.activity.models import Conversation, EndUser, Message, Run
from tests.activity.test_services_recording import base_records

pytestmark = pytest.mark.django_db


@pytest.mark.smoke
def test_ingest_records_and_answers_a_summary(make_api):
    client = make_api(scopes=["activity:write"])
    response = client.post("/v1/ingest", json=base_records())
    assert response.status == 200
    assert response.json() == {
        "object": "ingest_result",
        "created": 4,
        "updated": 0,
        "unchanged": 0,
    }
    again = client.post("/v1/ingest", json=base_records())
    assert again.json() == {"object": "ingest_result", "created": 0, "updated": 0, "unchanged": 4}
    assert (EndUser.objects.count(), Conversation.objects.count()) == (1, 1)
    assert (Message.objects.count(), Run.objects.count()) == (1, 1)


def test_ingest_on_the_agent_path_records_for_that_agent(make_api, agent):
    client = make_api(scopes=["activity:write"])
    assert client.post(f"/v1/agents/{agent.pk}/ingest", json=base_records()).status == 200
    assert Run.objects.get(id="run_1").agent_id == agent.pk


def test_ingest_needs_activity_write_which_full_read_keys_lack(make_api):
    client = make_api(scopes=["users:read", "conversations:read", "runs:read"])
    response = client.post("/v1/ingest", json=base_records())
    assert response.status == 403
    assert 'scope="activity:write"' in response.headers["WWW-Authenticate"]


def test_invalid_record_is_400_naming_index_and_field_and_keeps_nothing(make_api):
    client = make_api(scopes=["activity:write"])
    records = base_records()
    records[3]["input_tokens"] = "12"
    response = client.post("/v1/ingest", json=records)
    assert response.status == 400
    body = response.json()
    assert body["name"] == "bad_request"
    assert body["message"].startswith("records[3].input_tokens:")
    assert not EndUser.objects.exists()
    assert not Conversation.objects.exists()


def test_ingest_refuses_an_object_body_and_malformed_json(make_api):
    client = make_api(scopes=["activity:write"])
    assert client.post("/v1/ingest", json={"type": "user"}).status == 400
    response = client.post("/v1/ingest", data=b"[{", content_type="application/json")
    assert response.status == 400


def test_openapi_marks_ingest_as_an_extension_with_its_scope(client):
    document = client.get("/v1/openapi.json").json()
    operation = document["paths"]["/v1/ingest"]["post"]
    assert operation["x-extension"] is True
    assert operation["x-required-scope"] == "activity:write"
    assert "413" in operation["responses"]
    for path in ("/v1/runs", "/v1/users", "/v1/conversations", "/v1/conversations/{id}/messages"):
        names = {p["name"] for p in document["paths"][path]["get"]["parameters"]}
        assert {"limit", "after"} <= names


def test_ids_recorded_by_another_workspace_are_invisible_to_ingest_and_reads(
    make_api, agent, other_agent
):
    """The same ids in two workspaces: the second ingest answers exactly as the first, and each
    Agent reads back only its own records (docs/faults.md, item 5)."""
    mine = make_api(scopes=["activity:write", "runs:read", "conversations:read", "users:read"])
    theirs = make_api(
        scopes=["activity:write", "runs:read", "conversations:read", "users:read"],
        for_agent=other_agent,
        created_by=other_agent.workspace.memberships.get().user,
    )
    first = mine.post("/v1/ingest", json=base_records())
    assert theirs.get("/v1/runs/run_1").status == 404
    records = base_records()
    records[1]["title"] = "Their refund"
    second = theirs.post("/v1/ingest", json=records)
    assert (second.status, second.body) == (first.status, first.body)
    assert mine.get("/v1/conversations/conv_1").json()["title"] == "Refund"
    assert theirs.get("/v1/conversations/conv_1").json()["title"] == "Their refund"
    for client in (mine, theirs):
        run = client.get("/v1/runs/run_1").json()
        assert (run["conversation_id"], run["user_id"]) == ("conv_1", "usr_1")
        messages = client.get("/v1/conversations/conv_1/messages").json()["data"]
        assert [m["id"] for m in messages] == ["msg_1"]
    # A retry by the second workspace is unchanged, as for any id it already recorded.
    again = theirs.post("/v1/ingest", json=records).json()
    assert again == {"object": "ingest_result", "created": 0, "updated": 0, "unchanged": 4}
