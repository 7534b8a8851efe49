"""Steps of a run through POST /v1/ingest and GET /v1/runs/{id}/steps: idempotent by id, a tree
under one run, bounded values, and run totals that agree with the model steps."""

import pytest

from apps.activity.bounds import MAX_ATTRIBUTE_BYTES, MAX_JSON_BYTES
from apps.activity.models import Message, Run, RunStep
from apps.usage.models import DailyUsage
from tests.activity.test_services_recording import base_records

pytestmark = pytest.mark.django_db


def walk(client, path: str, *, limit: int) -> list[dict]:
    """Every item of a /v1 list, page by page through next_cursor."""
    items: list[dict] = []
    cursor = None
    for _ in range(100):
        params = {"limit": limit, **({"after": cursor} if cursor else {})}
        body = client.get(path, params=params).json()
        items += body["data"]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            return items
        cursor = body["next_cursor"]
    raise AssertionError("the list never ended")


def _model_step(step_id, *, tokens=(100, 20), credits=0.1, model="gpt-4.1-mini", **extra):
    return {
        "type": "step", "id": step_id, "run_id": "run_1", "kind": "model", "name": "chat",
        "model_id": model, "input_tokens": tokens[0], "output_tokens": tokens[1],
        "total_tokens": sum(tokens), "credits_charged": credits, "finish_reason": "stop",
        "first_token_ms": 120.5, "started_at": "2025-01-31T12:00:01.100Z",
        "ended_at": "2025-01-31T12:00:01.900Z", **extra,
    }  # fmt: skip


def _tool_step(step_id, *, name="lookup_order", status="completed", **extra):
    return {
        "type": "step", "id": step_id, "run_id": "run_1", "kind": "tool",
        "name": f"execute_tool {name}", "tool_name": name, "mcp_server": "orders",
        "status": status, "input": {"order": 1042}, "output": {"state": "refunded"},
        "started_at": "2025-01-31T12:00:02Z", "ended_at": "2025-01-31T12:00:02.250Z", **extra,
    }  # fmt: skip


@pytest.fixture
def writer(make_api):
    client = make_api(scopes=["activity:write", "runs:read"])
    assert client.post("/v1/ingest", json=base_records()).status == 200
    return client


def test_steps_are_recorded_once_and_served_as_a_tree_in_start_order(writer):
    steps = [
        {"type": "step", "id": "st_root", "run_id": "run_1", "kind": "agent",
         "name": "invoke_agent support", "started_at": "2025-01-31T12:00:01Z",
         "ended_at": "2025-01-31T12:00:03Z"},
        _model_step("st_model", parent_id="st_root"),
        _tool_step("st_tool", parent_id="st_root"),
    ]  # fmt: skip
    first = writer.post("/v1/ingest", json=steps)
    assert first.json()["created"] == 3
    again = writer.post("/v1/ingest", json=steps)
    assert again.json() == {"object": "ingest_result", "created": 0, "updated": 0, "unchanged": 3}

    page = writer.get("/v1/runs/run_1/steps").json()
    assert [step["id"] for step in page["data"]] == ["st_root", "st_model", "st_tool"]
    root, model, tool = page["data"]
    assert root["parent_id"] is None and model["parent_id"] == "st_root"
    assert root["duration_ms"] == 2000.0  # from started_at and ended_at
    assert model["object"] == "run_step"
    assert (model["model_id"], model["total_tokens"], model["finish_reason"]) == (
        "gpt-4.1-mini", 120, "stop",
    )  # fmt: skip
    assert tool["input"] == {"order": 1042} and tool["output"] == {"state": "refunded"}
    assert (tool["tool_name"], tool["mcp_server"]) == ("lookup_order", "orders")


def test_step_list_pages_with_cursors_and_is_another_agents_404(writer, make_api, other_agent):
    steps = [
        _model_step(f"st_{index:03}", started_at=f"2025-01-31T12:00:{index % 60:02}Z",
                    ended_at=None)
        for index in range(45)
    ]  # fmt: skip
    assert writer.post("/v1/ingest", json=steps).status == 200
    seen = walk(writer, "/v1/runs/run_1/steps", limit=10)
    assert len(seen) == 45 and len({step["id"] for step in seen}) == 45
    assert [step["started_at"] for step in seen] == sorted(step["started_at"] for step in seen)
    theirs = make_api(scopes=["runs:read"], for_agent=other_agent)
    response = theirs.get("/v1/runs/run_1/steps")
    assert response.status == 404 and response.json()["name"] == "not_found"
    assert make_api(scopes=["users:read"]).get("/v1/runs/run_1/steps").status == 403


def test_run_totals_are_the_sum_of_its_model_steps(writer):
    assert writer.post("/v1/ingest", json=[_model_step("st_a")]).status == 200
    run = Run.objects.get(id="run_1")
    assert (run.input_tokens, run.output_tokens, run.total_tokens) == (100, 20, 120)
    assert run.model_id == "gpt-4.1-mini"  # the run had none: its first model step's
    # A second call adds up; re-sending the first changes nothing.
    response = writer.post(
        "/v1/ingest", json=[_model_step("st_a"), _model_step("st_b", tokens=(50, 5), credits=0.2)]
    )
    assert response.status == 200
    run.refresh_from_db()
    assert (run.input_tokens, run.output_tokens, run.total_tokens) == (150, 25, 175)
    assert run.credits_charged == pytest.approx(0.3)
    # The usage rollup heard each change as it hears run records.
    assert DailyUsage.objects.get(agent_id=run.agent_id).total_tokens == 175


def test_a_run_record_that_disagrees_with_its_steps_is_refused(writer):
    assert writer.post("/v1/ingest", json=[_model_step("st_a")]).status == 200
    wrong = writer.post("/v1/ingest", json=[{"type": "run", "id": "run_1", "input_tokens": 7}])
    assert wrong.status == 400
    assert wrong.json()["message"].startswith("records[0].input_tokens: 7 disagrees")
    assert Run.objects.get(id="run_1").input_tokens == 100
    # Agreeing totals, and totals no step carries (cache tokens), are the run record's own.
    right = writer.post(
        "/v1/ingest",
        json=[{"type": "run", "id": "run_1", "input_tokens": 100, "cache_read_tokens": 9,
               "status": "completed"}],
    )  # fmt: skip
    assert right.status == 200
    run = Run.objects.get(id="run_1")
    assert (run.input_tokens, run.cache_read_tokens, run.status) == (100, 9, "completed")


def test_a_run_without_steps_keeps_its_stated_totals(writer):
    response = writer.post("/v1/ingest", json=[{"type": "run", "id": "run_1", "total_tokens": 5}])
    assert response.status == 200
    assert Run.objects.get(id="run_1").total_tokens == 5


def test_tool_steps_name_the_runs_tools_and_failures(writer):
    response = writer.post(
        "/v1/ingest",
        json=[_tool_step("st_1"), _tool_step("st_2", name="refund", status="failed",
                                             error="card declined", output=None)],
    )  # fmt: skip
    assert response.status == 200
    run = Run.objects.get(id="run_1")
    assert run.tool_names == ["lookup_order", "refund"]
    assert run.failed_tool_names == ["refund"]
    step = RunStep.objects.get(id="st_2")
    assert (step.status, step.error) == ("failed", "card declined")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"run_id": "run_nope"}, "records[0].run_id: no run 'run_nope'"),
        ({"parent_id": "st_missing"}, "records[0].parent_id: no step 'st_missing'"),
        ({"parent_id": "st_x"}, "records[0].parent_id: 'st_x' would make a cycle"),
        ({"ended_at": "2025-01-31T11:00:00Z"}, "records[0].ended_at: earlier than started_at"),
        ({"kind": "llm"}, "records[0].kind: Must be one of"),
        ({"input_tokens": "12"}, "records[0].input_tokens:"),
        ({"input": {"a": "\u0000"}}, "records[0].input: Must not contain NUL"),
        ({"attributes": ["a"]}, "records[0].attributes: Must be a JSON object"),
    ],
)
def test_bad_steps_are_400_and_keep_nothing(writer, change, message):
    step = {**_model_step("st_x"), **change}
    response = writer.post("/v1/ingest", json=[step])
    assert response.status == 400, response.body
    assert response.json()["message"].startswith(message)
    assert not RunStep.objects.exists()


def test_a_parent_cycle_through_an_update_is_refused(writer):
    records = [_model_step("st_a"), _model_step("st_b", parent_id="st_a")]
    assert writer.post("/v1/ingest", json=records).status == 200
    response = writer.post("/v1/ingest", json=[{"type": "step", "id": "st_a", "parent_id": "st_b"}])
    assert response.status == 400
    assert "cycle" in response.json()["message"]
    assert RunStep.objects.get(id="st_a").parent_id is None


def test_large_values_are_stored_shortened_and_marked(writer):
    huge = "x" * (1024 * 1024)
    step = _tool_step("st_big", input={"blob": huge}, attributes={"big": huge, "small": 1})
    assert writer.post("/v1/ingest", json=[step]).status == 200
    stored = writer.get("/v1/runs/run_1/steps").json()["data"][0]
    assert stored["input"]["truncated"] is True
    assert stored["input"]["bytes"] > 1024 * 1024
    assert len(stored["input"]["preview"]) <= MAX_JSON_BYTES
    assert len(stored["attributes"]["big"].encode()) <= MAX_ATTRIBUTE_BYTES + 3
    assert stored["attributes"]["small"] == 1
    assert sorted(stored["truncated"]) == ["attributes.big", "input"]
    # Sending a small input later clears its mark and keeps the attribute's.
    again = writer.post("/v1/ingest", json=[{"type": "step", "id": "st_big", "input": {"a": 1}}])
    assert again.status == 200
    assert RunStep.objects.get(id="st_big").truncated == ["attributes.big"]


def test_a_message_links_to_the_run_that_produced_it(writer, make_api, agent):
    records = [
        {"type": "message", "id": "msg_answer", "conversation_id": "conv_1", "role": "assistant",
         "parts": [{"type": "text", "text": "Refunded."}], "run_id": "run_1"},
    ]  # fmt: skip
    assert writer.post("/v1/ingest", json=records).status == 200
    assert Message.objects.get(id="msg_answer").run_id == "run_1"
    other_conversation = [
        {"type": "conversation", "id": "conv_2"},
        {"type": "message", "id": "msg_wrong", "conversation_id": "conv_2", "role": "assistant",
         "run_id": "run_1"},
    ]  # fmt: skip
    response = writer.post("/v1/ingest", json=other_conversation)
    assert response.status == 400
    assert "belongs to conversation 'conv_1'" in response.json()["message"]


def test_openapi_marks_the_steps_list_as_an_extension(client):
    document = client.get("/v1/openapi.json").json()
    operation = document["paths"]["/v1/runs/{id}/steps"]["get"]
    assert operation["x-extension"] is True
    assert operation["x-required-scope"] == "runs:read"
    assert {"limit", "after"} <= {p["name"] for p in operation["parameters"]}


def test_runs_filter_by_a_tool_called_and_a_tool_that_failed(writer, make_api, client, owner):
    records = [
        {"type": "run", "id": "run_2", "conversation_id": "conv_1", "request_id": "r2",
         "sdk_version": "5", "created_at": "2025-01-31T12:00:02Z"},
        _tool_step("st_1"),
        _tool_step("st_2", run_id="run_2", name="refund", status="failed"),
        _tool_step("st_3", run_id="run_2", name="lookup_order"),
    ]  # fmt: skip
    assert writer.post("/v1/ingest", json=records).status == 200
    reader = make_api(scopes=["runs:read"])

    def ids(**params):
        response = reader.get("/v1/runs", params=params)
        assert response.status == 200, response.body
        return [run["id"] for run in response.json()["data"]]

    assert ids(tool_name="lookup_order") == ["run_2", "run_1"]
    assert ids(tool_name="refund") == ["run_2"]
    assert ids(failed_tool="refund") == ["run_2"]
    assert ids(failed_tool="lookup_order") == []
    assert ids(tool_name="refund", status="streaming", limit="1") == ["run_2"]
    client.force_login(owner)
    page = client.get("/runs/?failed_tool=refund").content.decode()
    assert "run_2" in page and 'href="/runs/run_1/"' not in page
