"""`span_mapping.step_fields` (which reads each span through a plan made once per attribute
shape) maps every span as the mapping before it did, kept here verbatim as `old_step_fields`, over
thousands of varied spans: every kind, AI SDK and GenAI names, values of every JSON type,
failures with and without exception events, open spans."""

import random
from typing import Any

import orjson
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from apps.activity import span_mapping
from apps.activity.otlp import started_at
from apps.activity.otlp.span_data import _datetime
from apps.activity.span_mapping import _document, _int, _json_or_text, _number, span_kind

SpanData = dict[str, Any]


# --- The mapping as it was (commit 4eddc8f), verbatim but for its names -----------------------


def _old_first(attributes: dict, used: set[str], *names: str) -> Any:
    for name in names:
        if attributes.get(name) is not None:
            used.update(names)
            return attributes[name]
    return None


def old_step_fields(span: SpanData) -> dict[str, Any]:
    """The step record of one span (apps.activity.services.step_record's fields)."""
    attributes = dict(span["attributes"])
    used: set[str] = set()
    kind = span_kind(span)
    started = started_at(span)
    ended = _datetime(span["end"])
    failed = span["status"] == Status.STATUS_CODE_ERROR
    fields: dict[str, Any] = {
        "id": span["span_id"],
        "parent_id": span["parent_span_id"],
        "trace_id": span["trace_id"],
        "kind": kind,
        "name": span["name"],
        "status": "failed" if failed else ("completed" if ended else "running"),
        "started_at": started,
        "ended_at": ended,
    }
    error = None
    for event in span["events"]:
        if event["name"] == "exception":
            error = event["attributes"].get("exception.message") or event["attributes"].get(
                "exception.type"
            )
    if failed:
        fields["error"] = span["status_message"] or (str(error) if error else "error")
    if kind in ("model", "agent"):
        fields["model_id"] = _old_first(
            attributes, used, "gen_ai.response.model", "gen_ai.request.model",
            "ai.response.model", "ai.model.id",
        )  # fmt: skip
        if fields["model_id"] is not None:
            fields["model_id"] = str(fields["model_id"])[:255]
        fields["input"] = _json_or_text(
            _old_first(attributes, used, "gen_ai.input.messages", "ai.prompt.messages", "ai.prompt")
        )
        output = _old_first(
            attributes, used, "gen_ai.output.messages", "ai.response.text", "ai.response.object"
        )
        tool_calls = _old_first(attributes, used, "ai.response.toolCalls")
        if output is None and tool_calls is not None:
            output = tool_calls
        fields["output"] = _json_or_text(output)
        finish = _old_first(
            attributes, used, "gen_ai.response.finish_reasons", "ai.response.finishReason"
        )
        if isinstance(finish, list):
            finish = finish[0] if finish else None
        fields["finish_reason"] = str(finish)[:64] if finish is not None else None
    if kind == "model":
        for field, names in (
            ("input_tokens", ("gen_ai.usage.input_tokens", "ai.usage.inputTokens",
                              "gen_ai.usage.prompt_tokens", "ai.usage.promptTokens")),
            ("output_tokens", ("gen_ai.usage.output_tokens", "ai.usage.outputTokens",
                               "gen_ai.usage.completion_tokens", "ai.usage.completionTokens")),
            ("total_tokens", ("gen_ai.usage.total_tokens", "ai.usage.totalTokens")),
            ("cache_read_tokens", ("gen_ai.usage.cache_read.input_tokens",
                                   "gen_ai.usage.cache_read_input_tokens",
                                   "ai.usage.cachedInputTokens")),
            ("cache_write_tokens", ("gen_ai.usage.cache_creation.input_tokens",
                                    "gen_ai.usage.cache_creation_input_tokens")),
        ):  # fmt: skip
            fields[field] = _int(_old_first(attributes, used, *names))
        if fields["total_tokens"] is None and fields["input_tokens"] is not None:
            fields["total_tokens"] = fields["input_tokens"] + (fields["output_tokens"] or 0)
        first_chunk = _number(
            _old_first(
                attributes,
                used,
                "ai.response.msToFirstChunk",
                "gen_ai.response.time_to_first_chunk",
            )
        )
        fields["first_token_ms"] = first_chunk
        fields["credits_charged"] = _number(_old_first(attributes, used, "credits_charged"))
    elif kind == "tool":
        name = _old_first(attributes, used, "gen_ai.tool.name", "ai.toolCall.name")
        fields["tool_name"] = str(name)[:255] if name is not None else None
        server = _old_first(attributes, used, "mcp.server.name", "gen_ai.tool.mcp_server")
        fields["mcp_server"] = str(server)[:255] if server is not None else None
        fields["input"] = _json_or_text(
            _old_first(attributes, used, "gen_ai.tool.call.arguments", "ai.toolCall.args")
        )
        fields["output"] = _json_or_text(
            _old_first(attributes, used, "gen_ai.tool.call.result", "ai.toolCall.result")
        )
        used.update(("gen_ai.tool.call.id", "ai.toolCall.id", "gen_ai.operation.name"))
    elif kind == "retrieval":
        query = _old_first(attributes, used, "gen_ai.retrieval.query.text", "db.query.text")
        fields["query"] = str(query) if query is not None else None
        documents = _json_or_text(_old_first(attributes, used, "gen_ai.retrieval.documents"))
        if isinstance(documents, list):
            fields["documents"] = [_document(item) for item in documents[:100]]
    if failed and error and "error" not in fields:
        fields["error"] = str(error)
    used.add("gen_ai.operation.name")
    kept = {key: value for key, value in attributes.items() if key not in used}
    if span["events"]:
        kept["otel.events"] = span["events"][:20]
    if span["resource"].get("service.name"):
        kept["service.name"] = span["resource"]["service.name"]
    fields["attributes"] = kept
    if fields.get("error"):
        fields["error"] = str(fields["error"])
    return {key: value for key, value in fields.items() if value is not None or key in (
        "parent_id", "ended_at")}  # fmt: skip


# --- Varied spans -------------------------------------------------------------------------------

_NAMES = sorted(
    {name for names in span_mapping._GROUPS.values() for group in names for name in group}
    | {"gen_ai.tool.call.id", "ai.toolCall.id", "app.custom", "user.id", "http.status_code"}
)
_OPERATIONS = [None, "chat", "text_completion", "generate_content", "embeddings", "execute_tool",
               "invoke_agent", "create_agent", "retrieval", "something_else"]  # fmt: skip
_SPAN_NAMES = ["step", "ai.toolCall", "ai.streamText", "ai.generateText.doGenerate",
               "ai.streamObject.doStream", "ai.embedMany", "chat gpt-4.1"]  # fmt: skip


def _value(rng: random.Random) -> Any:
    return rng.choice([
        None, "", "text", "12", "-3", '{"a": [1, 2]}', '[{"role": "user", "content": "hi"}]',
        "[not json", "{", 0, 7, -5, 2.5, 3.0, -1.5, True, False, ["stop"], [], ["a", "b"],
        {"k": "v"}, [{"id": "d1", "title": "T", "content": "c", "score": 0.5}, "plain"],
        '[{"id": "d2", "passage": "p", "score": -1}]', "x" * 300,
    ])  # fmt: skip


def _varied_span(rng: random.Random, index: int) -> SpanData:
    attributes = {name: _value(rng) for name in rng.sample(_NAMES, rng.randrange(0, 12))}
    operation = rng.choice(_OPERATIONS)
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
    events = [
        {"name": rng.choice(["exception", "log"]), "time": "1",
         "attributes": {key: rng.choice(["boom", "", None, "TypeError"])
                        for key in rng.sample(["exception.message", "exception.type"],
                                              rng.randrange(0, 3))}}
        for _ in range(rng.choice([0, 0, 1, 2, 25]))
    ]  # fmt: skip
    start = 1_738_324_800_000_000_000 + rng.randrange(0, 10**12)
    return {
        "trace_id": f"{index:032x}",
        "span_id": f"{index + 1:016x}",
        "parent_span_id": rng.choice([None, f"{index + 2:016x}"]),
        "name": rng.choice(_SPAN_NAMES),
        "start": str(start),
        "end": rng.choice([None, str(start), str(start + rng.randrange(0, 10**10))]),
        "status": rng.choice([Status.STATUS_CODE_UNSET, Status.STATUS_CODE_OK,
                              Status.STATUS_CODE_ERROR]),
        "status_message": rng.choice(["", "refund service unavailable"]),
        "attributes": attributes,
        "events": events,
        "resource": rng.choice([{}, {"service.name": "bot"}, {"service.name": ""},
                                {"telemetry.sdk.name": "opentelemetry"}]),
        "scope": "t",
    }  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_step_fields_maps_varied_spans_as_the_old_mapping_did(seed):
    rng = random.Random(seed)
    spans = [_varied_span(rng, index) for index in range(3000)]
    span_mapping._PLANS.clear()
    kinds = set()
    for span in spans + spans:  # the second time through, every plan is made already
        expected = old_step_fields(span)
        assert span_mapping.step_fields(span) == expected, span
        assert orjson.dumps(
            span_mapping.step_fields(span), option=orjson.OPT_NON_STR_KEYS
        ) == orjson.dumps(expected, option=orjson.OPT_NON_STR_KEYS)  # the same key order too
        kinds.add(expected["kind"])
    assert kinds == {"model", "agent", "tool", "retrieval", "custom"}


def test_the_plans_stay_bounded():
    span_mapping._PLANS.clear()
    for index in range(span_mapping._MAX_PLANS + 10):
        span = _varied_span(random.Random(index), index)
        span["attributes"][f"unique.{index}"] = "x"
        assert span_mapping.step_fields(span) == old_step_fields(span)
    assert len(span_mapping._PLANS) <= span_mapping._MAX_PLANS
