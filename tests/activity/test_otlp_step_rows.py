"""OTLP steps (and any new rows) written as values straight to the COPY
(`recording.values_insert`) are the rows the model-instance paths write: `rows_insert` of
`new_row` instances, and the upsert a span sent again goes through."""

from datetime import UTC, datetime

import orjson
import pytest
from django.db import connection

from apps.activity.models import Run, RunStep
from apps.activity.recording import new_row, rows_insert, values_insert
from tests.activity.factories import run_factory

pytestmark = [
    pytest.mark.django_db,
    # The COPY is PostgreSQL's (elsewhere values_insert builds the same new_row instances), and
    # the rows are compared as PostgreSQL holds them (to_jsonb).
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's COPY and to_jsonb"),
]

T0 = 1_738_324_800_000_000_000  # 2025-01-31T12:00:00Z in nanoseconds
TRACE = "6c9f0aa798038103d269b633813fc60d"
AT = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def _stored(model, row_id: str) -> dict:
    """Every column of the row as PostgreSQL holds it (JSON compared as jsonb values)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT to_jsonb(t) FROM {model._meta.db_table} t WHERE id = %s", [row_id])
        (row,) = cursor.fetchone()
    value = row if isinstance(row, dict) else orjson.loads(row)
    return {key: item for key, item in value.items() if key not in ("row", "id")}


STEP_VALUES = [
    {},  # every default
    {"kind": "model", "model_id": "gpt-4.1-mini", "input_tokens": 100, "output_tokens": 20,
     "total_tokens": 120, "credits_charged": 0.125, "first_token_ms": 41.5,
     "finish_reason": "stop", "input": [{"role": "user", "content": "é ✓ \u2028"}],
     "output": "plain text", "ended_at": AT, "duration_ms": 1000.0},
    {"kind": "tool", "tool_name": "lookup", "mcp_server": "orders", "input": {"order": 1042},
     "output": {"nested": {"list": [1, 2.5, None, True]}}, "status": "failed",
     "error": "boom", "attributes": {"kept": "x", "n": 3, "deep": {"a": [1]}},
     "truncated": ["output", "attributes.blob"]},
    {"kind": "retrieval", "query": "refund policy", "input": None, "output": None,
     "documents": [{"document_id": "d1", "title": None, "url": None, "passage": "p",
                    "score": 0.5}],
     "attributes": {1: "a non-string key", "otel.events": [{"name": "e", "time": "1"}]}},
    {"input": 0, "output": False, "attributes": {}, "documents": [], "parent_id": None},
]  # fmt: skip


@pytest.mark.parametrize("values", STEP_VALUES)
def test_a_step_copied_from_values_is_the_step_an_instance_writes(agent, values):
    run = run_factory(agent=agent)
    base = {"agent_id": agent.pk, "run_id": run.id, "name": "step", "started_at": AT,
            "created_at": AT, "updated_at": AT}  # fmt: skip
    values_insert(RunStep, [{**base, **values, "id": "from-values"}])
    rows_insert(RunStep, [new_row(RunStep, {**base, **values, "id": "from-instance"})])
    assert _stored(RunStep, "from-values") == _stored(RunStep, "from-instance")


def test_a_run_copied_from_values_is_the_run_an_instance_writes(agent):
    conversation = run_factory(agent=agent).conversation
    values = {"agent_id": agent.pk, "conversation_id": conversation.id, "request_id": "r",
              "sdk_version": "otlp", "status": "completed", "created_at": AT, "updated_at": AT,
              "tool_names": ["a", "b"], "total_turn_latency_ms": 12.5}  # fmt: skip
    values_insert(Run, [{**values, "id": "run-from-values"}])
    rows_insert(Run, [new_row(Run, {**values, "id": "run-from-instance"})])
    assert _stored(Run, "run-from-values") == _stored(Run, "run-from-instance")


def _attribute(key, value):
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [
            {"stringValue": item} for item in value]}}}  # fmt: skip
    return {"key": key, "value": {"stringValue": value}}


def _span(span_id, *, parent=None, name="step", attributes=(), status=None, events=(), end=True):
    span = {"traceId": TRACE, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + 1000),
            "attributes": [_attribute(key, value) for key, value in dict(attributes).items()],
            "events": list(events)}  # fmt: skip
    if end:
        span["endTimeUnixNano"] = str(T0 + 1_500_000_123)
    if parent:
        span["parentSpanId"] = parent
    if status:
        span["status"] = status
    return span


ROOT = "aaaaaaaaaaaaaaa1"
VARIED = [
    _span(ROOT, name="invoke_agent support", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4.1",
        "gen_ai.input.messages": '[{"role": "user", "content": "Where is my refund?"}]',
        "gen_ai.output.messages": '[{"role": "assistant", "content": "On its way."}]',
        "app.custom": "kept"}),
    _span("bbbbbbbbbbbbbbb2", parent=ROOT, name="chat gpt-4.1-mini", attributes={
        "gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4.1-mini",
        "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 7, "gen_ai.response.finish_reasons": ["stop"],
        "ai.response.msToFirstChunk": 123.5, "credits_charged": 0.25, "unmapped.flag": True}),
    _span("ccccccccccccccc3", parent=ROOT, name="execute_tool lookup", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.arguments": '{"order": 1042}', "gen_ai.tool.call.result": "not json {",
        "mcp.server.name": "orders", "blob": "x" * 10_000}),
    _span("ddddddddddddddd4", parent=ROOT, name="execute_tool refund",
          attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund"},
          status={"code": 2, "message": ""},
          events=[{"name": "exception", "timeUnixNano": str(T0 + 2000), "attributes": [
              _attribute("exception.message", "refund service unavailable")]}]),
    _span("eeeeeeeeeeeeeee5", parent=ROOT, name="retrieve docs", attributes={
        "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "refund policy",
        "gen_ai.retrieval.documents":
            '[{"id": "doc-1", "title": "Refunds", "content": "Within 30 days.", "score": 0.9}]'}),
    _span("fffffffffffffff6", parent=ROOT, name="ai.streamText.doStream", end=False, attributes={
        "ai.model.id": "claude", "ai.prompt.messages": "[" + '{"a": "' + "y" * 40_000 + '"}]',
        "ai.usage.promptTokens": 5, "ai.usage.completionTokens": 6, "ratio": 0.5}),
    _span("1111111111111117", parent="fffffffffffffff6", name="custom work",
          attributes={"anything": "goes", "count": 3}),
]  # fmt: skip


def test_varied_spans_sent_again_rewrite_their_steps_to_the_same_rows(make_api):
    """The first request COPYs the steps from values; the same spans sent again go through the
    upsert of model instances: every column must come out the same (but `updated_at`)."""
    writer = make_api(scopes=["activity:write"])
    body = {"resourceSpans": [{"resource": {"attributes": [_attribute("service.name", "bot")]},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": VARIED}]}]}  # fmt: skip
    first = writer.post("/v1/otlp/v1/traces", data=orjson.dumps(body),
                        content_type="application/json")  # fmt: skip
    assert first.status == 200 and first.json() == {}
    ids = [span["spanId"] for span in VARIED]
    copied = {step_id: _stored(RunStep, step_id) for step_id in ids}
    assert copied["ccccccccccccccc3"]["truncated"] == ["attributes.blob"]
    assert copied["fffffffffffffff6"]["truncated"] == ["input"]
    assert copied["fffffffffffffff6"]["ended_at"] is None
    assert copied["ddddddddddddddd4"]["error"] == "refund service unavailable"
    assert copied["bbbbbbbbbbbbbbb2"]["attributes"] == {"unmapped.flag": True,
                                                          "service.name": "bot"}  # fmt: skip
    again = writer.post("/v1/otlp/v1/traces", data=orjson.dumps(body),
                        content_type="application/json")  # fmt: skip
    assert again.status == 200 and again.json() == {}
    for step_id in ids:
        upserted = _stored(RunStep, step_id)
        assert upserted.pop("updated_at") >= copied[step_id].pop("updated_at")
        assert upserted == copied[step_id], step_id
