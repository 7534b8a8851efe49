"""Step and run analytics (GET /v1/analytics/steps and /runs) from the rollup the recording
writes: equal to the figures recomputed from the rows after creates, updates and OTLP re-sends,
and answered without reading the steps."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.activity import analytics
from apps.activity.models import Rollup, RollupLatency, RunStep
from apps.common.latency import bucket_of, percentiles
from tests.activity.test_otlp import T0, _body, _post, _span
from tests.activity.test_services_recording import base_records

pytestmark = pytest.mark.django_db

PERIOD = {"from": "2025-01-01", "to": "2025-12-31"}


def _records() -> list[dict]:
    records = base_records()
    records[3].update(environment="production", release="1.4.2",
                      total_turn_latency_ms=2870, status="completed")  # fmt: skip
    records.append(
        {"type": "run", "id": "run_2", "conversation_id": "conv_1", "request_id": "req_2",
         "sdk_version": "5", "created_at": "2025-01-31T12:05:00Z", "environment": "staging",
         "status": "failed", "error_code": "TimeoutError", "total_turn_latency_ms": 30000}
    )  # fmt: skip
    for n in range(6):
        records.append(
            {"type": "step", "id": f"tool_{n}", "run_id": ("run_1", "run_2")[n % 2],
             "kind": "tool", "name": "execute_tool lookup_order", "tool_name": "lookup_order",
             "status": "failed" if n == 5 else "completed",
             "started_at": "2025-01-31T12:00:02Z", "duration_ms": 100 * (n + 1)}
        )  # fmt: skip
        records.append(
            {"type": "step", "id": f"chat_{n}", "run_id": "run_1", "kind": "model",
             "name": "chat", "model_id": "gpt-4.1-mini", "input_tokens": 100,
             "output_tokens": 10, "total_tokens": 110,
             "started_at": f"2025-0{1 + n % 2}-0{1 + n}T12:00:03Z", "duration_ms": 900 + n}
        )  # fmt: skip
    return records


def _everything(agent_id: str) -> dict:
    out = {}
    for group in analytics.GROUPS:
        rows = analytics.rollup_read(
            agent_id=agent_id, group=group, first_day=T_FIRST, last_day=T_LAST, by_day=True
        )
        out[group] = [analytics.figures_to_dict(row, by_day=True) for row in rows]
    return out


T_FIRST = __import__("datetime").date(2000, 1, 1)
T_LAST = __import__("datetime").date(2100, 1, 1)


def test_the_rollup_equals_the_rows_after_creates_updates_and_otlp_resends(make_api, agent):
    client = make_api()
    assert client.post("/v1/ingest", json=_records()).status == 200
    # Updates: a step fails and slows down, a run moves environment.
    update = [
        {"type": "step", "id": "tool_0", "status": "failed", "duration_ms": 5000},
        {"type": "run", "id": "run_1", "environment": "canary"},
    ]
    assert client.post("/v1/ingest", json=update).status == 200
    # OTLP: a trace, then the same spans again with another duration (a rewrite).
    root, child = "aaaaaaaaaaaaaaa1", "bbbbbbbbbbbbbbb2"
    spans = [
        _span(root, name="invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}),
        _span(child, parent=root, name="execute_tool refund",
              attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund"}),
    ]  # fmt: skip
    assert _post(client, _body(*spans)).status == 200
    spans[1]["endTimeUnixNano"] = str(T0 + 4_000_000_000)
    assert _post(client, _body(*spans)).status == 200

    live = _everything(agent.pk)
    analytics.rollup_rebuild(agent_id=agent.pk)
    assert _everything(agent.pk) == live  # the rollup is what the rows add up to

    tools = {row["key"]: row for row in live["tool"]}
    assert tools["lookup_order"]["count"] == 6 and tools["lookup_order"]["failed"] == 2
    assert tools["refund"]["count"] == 1  # re-sent: counted once, with its last duration
    assert tools["refund"]["latency_ms"]["p50"] == percentiles({bucket_of(4000): 1}, (50,))[0]
    durations = sorted(RunStep.objects.filter(tool_name="lookup_order").values_list(
        "duration_ms", flat=True))  # fmt: skip
    assert durations == [200, 300, 400, 500, 600, 5000]
    expected = percentiles({bucket_of(d): 1 for d in durations}, (50, 95, 99))
    assert list(tools["lookup_order"]["latency_ms"].values()) == expected
    (model,) = live["model"]
    assert (model["key"], model["count"], model["total_tokens"]) == ("gpt-4.1-mini", 6, 660)
    assert [day["count"] for day in model["days"]] == [1, 1, 1, 1, 1, 1]
    environments = {row["key"]: (row["count"], row["failed"]) for row in live["environment"]}
    assert environments == {"canary": (1, 0), "staging": (1, 1), "": (1, 0)}  # "" = the trace


def test_analytics_answer_from_the_rollup_without_reading_steps(make_api, agent):
    client = make_api(scopes=["activity:write", "runs:read"])
    assert client.post("/v1/ingest", json=_records()).status == 200
    with CaptureQueriesContext(connection) as queries:
        answer = client.get("/v1/analytics/steps", params={"group": "tool", **PERIOD})
    assert answer.status == 200
    assert not any("activity_runstep" in query["sql"] for query in queries.captured_queries)
    body = answer.json()
    assert (body["object"], body["group"], body["from"]) == ("step_analytics", "tool", "2025-01-01")
    (row,) = body["data"]
    assert row["key"] == "lookup_order" and row["count"] == 6 and row["failed"] == 1
    assert row["error_rate"] == round(1 / 6, 6)
    assert "days" not in row
    by_day = client.get("/v1/analytics/steps", params={"group": "model", "by_day": "true",
                                                       **PERIOD}).json()  # fmt: skip
    assert len(by_day["data"][0]["days"]) == 6
    runs = client.get("/v1/analytics/runs", params={"group": "release", **PERIOD}).json()
    assert {row["key"]: row["count"] for row in runs["data"]} == {"1.4.2": 1, "": 1}
    # An empty period, and every bad parameter named.
    empty = client.get("/v1/analytics/steps", params={"from": "2024-01-01", "to": "2024-01-31"})
    assert empty.json()["data"] == []
    for params, named in [({"group": "tenant"}, "group"), ({"from": "yesterday"}, "from"),
                          ({"tenant": "x"}, "tenant"), ({"by_day": "yes"}, "by_day"),
                          ({"from": "2024-01-01", "to": "2025-06-01"}, "366")]:  # fmt: skip
        answer = client.get("/v1/analytics/steps", params=params)
        assert answer.status == 400 and named in answer.json()["message"], params
    assert client.get("/v1/analytics/runs", params={"group": "tool"}).status == 400
    assert Rollup.objects.exists() and RollupLatency.objects.exists()
