"""POST /v1/otlp/v1/traces: the OpenTelemetry Python SDK's own OTLP/HTTP exporters (protobuf and
JSON) against a live server, and bad input answered per the OTLP specification."""

import gzip
import time

import orjson
import pytest
from google.protobuf import json_format
from google.rpc.code_pb2 import Code
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from apps.activity.models import Conversation, EndUser, Message, PendingSpan, Run, RunStep
from apps.activity.otlp.decoding import _ids_as_base64
from tests.activity.test_otlp_ai_sdk import warm_up

T0 = 1_738_324_800_000_000_000  # 2025-01-31T12:00:00Z in nanoseconds
TRACE = "5b8efff798038103d269b633813fc60c"
PATH = "/v1/otlp/v1/traces"

pytestmark = pytest.mark.django_db


def _sdk_spans(protocol: str, *, processor: str) -> None:
    """Spans of one agent turn, as a GenAI-instrumented runtime makes them, exported by the
    SDK's exporter configured only through the documented environment variables."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    if protocol == "http/json":
        from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    exporter = OTLPSpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    span_processor = SimpleSpanProcessor if processor == "simple" else BatchSpanProcessor
    provider.add_span_processor(span_processor(exporter))
    tracer = provider.get_tracer("tests.genai")
    with tracer.start_as_current_span(
        "invoke_agent support",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support",
            "gen_ai.conversation.id": f"conv-{protocol.replace('/', '-')}",
            "user.id": "customer-42",
            "gen_ai.input.messages": orjson.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Where is order 1042?"}]}]
            ).decode(),
            "gen_ai.output.messages": orjson.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "It shipped."}]}]
            ).decode(),
        },
    ) as root:
        with tracer.start_as_current_span(
            "chat gpt-4.1-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4.1-mini",
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 30,
                "gen_ai.response.finish_reasons": ["tool_calls"],
                "gen_ai.provider.name": "openai",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup_order",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.arguments": '{"order": 1042}',
                "gen_ai.tool.call.result": '{"state": "shipped"}',
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool refund",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund"},
        ) as failing:
            failing.set_status(Status(StatusCode.ERROR, "refund service unavailable"))
        with tracer.start_as_current_span(
            "chat gpt-4.1-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4.1-mini",
                "gen_ai.usage.input_tokens": 200,
                "gen_ai.usage.output_tokens": 12,
            },
        ):
            pass
        root.set_attribute("app.custom", "kept")
    assert provider.force_flush(10_000)
    provider.shutdown()


@pytest.mark.parametrize(
    ("protocol", "processor", "compression"),
    [("http/protobuf", "simple", "none"), ("http/json", "batch", "gzip")],
)
def test_the_python_sdk_records_a_run_with_its_steps(
    live_server, make_api, monkeypatch, protocol, processor, compression
):
    writer = make_api(scopes=["activity:write"])
    reader = make_api(scopes=["runs:read", "conversations:read", "users:read"])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{live_server.url}/v1/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{writer.raw_key}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60")
    warm_up(live_server.url)

    _sdk_spans(protocol, processor=processor)

    runs = reader.get("/v1/runs").json()["data"]
    assert len(runs) == 1
    run = runs[0]
    conversation_id = f"conv-{protocol.replace('/', '-')}"
    assert run["conversation_id"] == conversation_id
    assert run["status"] == "completed"
    assert run["model_id"] == "gpt-4.1-mini"
    assert (run["input_tokens"], run["output_tokens"], run["total_tokens"]) == (320, 42, 362)
    assert run["tool_names"] == ["lookup_order", "refund"]
    assert run["failed_tool_names"] == ["refund"]
    user = EndUser.objects.get(external_id="customer-42")
    assert run["user_id"] == user.id

    steps = reader.get(f"/v1/runs/{run['id']}/steps").json()["data"]
    assert [step["kind"] for step in steps] == ["agent", "model", "tool", "tool", "model"]
    root, chat, lookup, refund, _ = steps
    assert root["parent_id"] is None and root["trace_id"] == run["id"]
    assert {step["parent_id"] for step in steps[1:]} == {root["id"]}
    assert chat["finish_reason"] == "tool_calls" and chat["total_tokens"] == 150
    assert lookup["input"] == {"order": 1042} and lookup["output"] == {"state": "shipped"}
    assert (refund["status"], refund["error"]) == ("failed", "refund service unavailable")
    assert root["attributes"]["app.custom"] == "kept"  # unmapped attributes are kept
    assert root["attributes"]["gen_ai.agent.name"] == "support"

    messages = reader.get(f"/v1/conversations/{conversation_id}/messages").json()["data"]
    assert [(m["role"], m["parts"][0]["text"]) for m in messages] == [
        ("user", "Where is order 1042?"),
        ("assistant", "It shipped."),
    ]
    assert Message.objects.get(role="assistant").run_id == run["id"]
    assert not PendingSpan.objects.exists()  # the simple processor sent children first


# --- Hand-built OTLP/JSON for the edge cases ------------------------------------------------------


def _span(span_id, *, parent=None, trace=TRACE, name="step", attributes=None, **extra):
    span = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0),
        "endTimeUnixNano": str(T0 + 1_000_000_000),
        "attributes": [
            {
                "key": key,
                "value": {"stringValue": value}
                if isinstance(value, str)
                else {"intValue": str(value)},
            }
            for key, value in (attributes or {}).items()
        ],  # fmt: skip
        **extra,
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _body(*spans):
    return {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}  # fmt: skip


def _post(client, body, *, content_type="application/json", encoding=None):
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    headers = {"Content-Encoding": encoding} if encoding else None
    return client.post(PATH, data=data, content_type=content_type, headers=headers)


ROOT = "aaaaaaaaaaaaaaa1"
CHILD = "bbbbbbbbbbbbbbb2"
GRANDCHILD = "ccccccccccccccc3"


@pytest.fixture
def writer(make_api):
    return make_api(scopes=["activity:write", "runs:read"])


def test_a_span_before_its_parent_waits_and_is_placed_when_the_parent_arrives(writer):
    grandchild = _span(GRANDCHILD, parent=CHILD, name="execute_tool x",
                       attributes={"gen_ai.operation.name": "execute_tool"})  # fmt: skip
    first = _post(writer, _body(grandchild))
    assert first.status == 200 and first.json() == {}  # full success is an empty response
    assert PendingSpan.objects.count() == 1 and not RunStep.objects.exists()
    _post(writer, _body(_span(CHILD, parent=ROOT)))
    assert PendingSpan.objects.count() == 2
    root = _span(ROOT, name="invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    assert _post(writer, _body(root)).json() == {}
    assert not PendingSpan.objects.exists()
    steps = {step.id: step for step in RunStep.objects.all()}
    assert steps[GRANDCHILD].parent_id == CHILD and steps[CHILD].parent_id == ROOT
    assert {step.run_id for step in steps.values()} == {TRACE}
    # Sending everything again changes nothing (idempotent on the span id).
    before = list(RunStep.objects.order_by("id").values("id", "parent_id", "name", "run_id"))
    again = _post(writer, _body(root, _span(CHILD, parent=ROOT), grandchild))
    assert again.json() == {}
    assert (
        list(RunStep.objects.order_by("id").values("id", "parent_id", "name", "run_id")) == before
    )
    assert Run.objects.count() == 1 and Conversation.objects.get().id == f"otel-{TRACE}"


def test_bad_spans_are_rejected_alone_with_a_partial_success(writer):
    other_trace = "1" * 32
    body = _body(
        _span(ROOT),  # good
        _span(CHILD, parent=ROOT),  # good
        _span("0000000000000000", parent=ROOT),  # all-zero span id
        _span("dddd", parent=ROOT),  # too short
        _span("zzzzzzzzzzzzzzzz", parent=ROOT),  # not hex
        {**_span("eeeeeeeeeeeeeee5"), "traceId": ""},  # missing trace id
        _span("fffffffffffffff6", parent=ROOT, trace=other_trace),  # parent in another trace
        _span("1111111111111111", parent="2222222222222222"),  # a cycle of two
        _span("2222222222222222", parent="1111111111111111"),
        _span("3333333333333333", parent="3333333333333333"),  # its own parent
        {**_span("4444444444444444"), "startTimeUnixNano": "0"},  # no start
        "not a span",
    )
    response = _post(writer, body)
    assert response.status == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "10"  # int64 is a string in OTLP/JSON
    assert "spanId must be 8 bytes" in partial["errorMessage"]
    assert set(RunStep.objects.values_list("id", flat=True)) == {ROOT, CHILD}


def test_the_last_instant_a_span_time_can_name_is_recorded(writer):
    """The largest fixed64 of nanoseconds (in 2554) is a step's end like any other: no span
    time is out of a datetime's range, so decoding checks none."""
    last = 2**64 - 1
    response = _post(writer, _body({**_span(ROOT), "endTimeUnixNano": str(last)}))
    assert response.status == 200 and response.json() == {}
    step = RunStep.objects.get(id=ROOT)
    assert step.ended_at.isoformat() == "2554-07-21T23:34:33.709551+00:00"
    too_large = _post(writer, _body({**_span(CHILD), "endTimeUnixNano": str(last + 1)}))
    assert too_large.json()["partialSuccess"]["rejectedSpans"] == "1"  # not a fixed64
    assert not RunStep.objects.filter(id=CHILD).exists()


def test_a_span_id_recorded_in_another_trace_is_rejected(writer):
    assert _post(writer, _body(_span(ROOT))).json() == {}
    response = _post(writer, _body(_span(ROOT, trace="2" * 32), _span(CHILD, trace="2" * 32)))
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "recorded in another trace" in partial["errorMessage"]
    assert RunStep.objects.get(id=ROOT).trace_id == TRACE


def _status(response) -> Status:
    """The google.rpc.Status a failed OTLP request answers, decoded from its own encoding."""
    status = Status()
    if response.headers["Content-Type"] == "application/x-protobuf":
        status.ParseFromString(response.body)
    else:
        json_format.Parse(response.body, status, ignore_unknown_fields=True)
    return status


def test_malformed_bodies_and_wrong_content_types_are_clear_errors(writer):
    response = _post(writer, b"\xff\xff\xff garbage", content_type="application/x-protobuf")
    assert response.status == 400
    assert response.headers["Content-Type"] == "application/x-protobuf"
    status = _status(response)
    assert status.code == Code.INVALID_ARGUMENT and "Malformed protobuf" in status.message
    malformed_json = _post(writer, b"{", content_type="application/json")
    assert malformed_json.status == 400
    assert malformed_json.json()["name"] == "bad_request"
    assert _status(malformed_json).message.startswith("Malformed JSON")
    wrong = _post(writer, b"<xml/>", content_type="application/xml")
    assert wrong.status == 415 and wrong.json()["name"] == "unsupported_media_type"
    assert "application/x-protobuf" in _status(wrong).message
    not_gzip = _post(writer, b"not gzip", content_type="application/x-protobuf", encoding="gzip")
    assert not_gzip.status == 400 and _status(not_gzip).message == "The body is not valid gzip."
    assert _post(writer, [1, 2]).status == 400
    assert _post(writer, {"resourceSpans": "x"}).status == 400
    assert not RunStep.objects.exists()


def test_authentication_and_scope_failures_are_statuses_in_the_request_encoding(
    make_api, anonymous_api
):
    protobuf = ExportTraceServiceRequest().SerializeToString()
    anonymous = _post(anonymous_api, protobuf, content_type="application/x-protobuf")
    assert anonymous.status == 401 and anonymous.headers["WWW-Authenticate"].startswith("Bearer")
    assert _status(anonymous).code == Code.UNAUTHENTICATED
    reader = make_api(scopes=["runs:read"])
    denied = _post(reader, _body(_span(ROOT)))
    assert denied.status == 403 and denied.json()["name"] == "insufficient_scope"
    status = _status(denied)
    assert status.code == Code.PERMISSION_DENIED and "activity:write" in status.message


def test_gzip_protobuf_answers_in_protobuf(writer):
    request = ExportTraceServiceRequest()
    body = _body(_span(ROOT), _span("0000000000000000"))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"] = [
        _ids_as_base64(span) for span in body["resourceSpans"][0]["scopeSpans"][0]["spans"]
    ]
    json_format.ParseDict(body, request)
    response = _post(
        writer,
        gzip.compress(request.SerializeToString()),
        content_type="application/x-protobuf",
        encoding="gzip",
    )
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(response.body)
    assert answer.partial_success.rejected_spans == 1
    assert RunStep.objects.filter(id=ROOT).exists()


def test_ten_thousand_spans_in_one_request_are_recorded(writer):
    spans = [_span(ROOT, name="invoke_agent big")] + [
        _span(f"{index + 1:016x}", parent=ROOT, name=f"execute_tool t{index % 7}",
              attributes={"gen_ai.operation.name": "execute_tool",
                          "gen_ai.tool.name": f"t{index % 7}"})
        for index in range(9_999)
    ]  # fmt: skip
    started = time.monotonic()
    response = _post(writer, _body(*spans))
    elapsed = time.monotonic() - started
    assert response.status == 200 and response.json() == {}
    assert RunStep.objects.count() == 10_000
    assert Run.objects.get().tool_names == [f"t{index}" for index in range(7)]
    assert elapsed < 60, elapsed
    one_more = _post(writer, _body(*spans, _span("ffffffffffffff01", parent=ROOT)))
    assert one_more.json()["partialSuccess"]["rejectedSpans"] == "1"


def test_a_one_megabyte_attribute_is_recorded_truncated_and_marked(writer):
    huge = "x" * (1024 * 1024)
    span = _span(ROOT, name="execute_tool t", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
        "gen_ai.tool.call.result": huge, "blob": huge})  # fmt: skip
    assert _post(writer, _body(span)).json() == {}
    step = writer.get(f"/v1/runs/{TRACE}/steps").json()["data"][0]
    assert step["output"]["truncated"] is True
    assert sorted(step["truncated"]) == ["attributes.blob", "output"]


def test_the_endpoint_needs_activity_write(make_api, anonymous_api):
    assert _post(anonymous_api, _body(_span(ROOT))).status == 401
    reader = make_api(scopes=["runs:read"])
    assert _post(reader, _body(_span(ROOT))).status == 403
    assert not RunStep.objects.exists()
