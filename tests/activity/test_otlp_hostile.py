"""Hostile OTLP requests (issue 34): a NUL anywhere costs a character, never the batch; each
limit on what one request may ask is refused as the OTLP/HTTP specification answers it, naming
the limit; a request's transaction cannot wait on a lock for minutes."""

import threading

import orjson
import pytest
from django.db import connections
from google.protobuf import json_format
from google.rpc.code_pb2 import Code
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from apps.activity import otlp
from apps.activity.models import Conversation, Message, PendingSpan, Run, RunStep
from apps.activity.otlp.decoding import _ids_as_base64
from tests.activity.test_otlp_ai_sdk import warm_up

PATH = "/v1/otlp/v1/traces"
T0 = 1_738_324_800_000_000_000
TRACE = "5b8efff798038103d269b633813fc60c"
ROOT = "aaaaaaaaaaaaaaa1"
NUL = "\x00"
BAD = "\ufffd"

pytestmark = pytest.mark.django_db


def _text(value):
    return {"stringValue": value}


def _span(span_id, *, parent=None, trace=TRACE, name="step", attributes=(), **extra):
    span = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(T0),
        "endTimeUnixNano": str(T0 + 1_000_000_000),
        "attributes": [{"key": key, "value": value} for key, value in attributes],
        **extra,
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _body(*spans, resource=()):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": k, "value": v} for k, v in resource]},
                "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}],
            }
        ]
    }


def _post(client, body, *, content_type="application/json"):
    if content_type == otlp.PROTOBUF:
        request = ExportTraceServiceRequest()
        body = {**body, "resourceSpans": [
            {**resource_spans, "scopeSpans": [
                {**scope_spans, "spans": [_ids_as_base64(span) for span in scope_spans["spans"]]}
                for scope_spans in resource_spans["scopeSpans"]]}
            for resource_spans in body["resourceSpans"]]}  # fmt: skip
        json_format.ParseDict(body, request)
        data = request.SerializeToString()
    else:
        data = orjson.dumps(body)
    return client.post(PATH, data=data, content_type=content_type)


def _partial(response, content_type):
    assert response.status == 200, response.body
    answer = ExportTraceServiceResponse()
    if content_type == otlp.PROTOBUF:
        answer.ParseFromString(response.body)
    else:
        json_format.Parse(response.body, answer)
    return answer.partial_success


@pytest.fixture
def writer(make_api):
    return make_api(scopes=["activity:write", "runs:read", "conversations:read"])


# --- NUL --------------------------------------------------------------------------------------


def _nul_spans():
    """One span per place a NUL can hide, each next to a span without one."""
    messages = orjson.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": f"where{NUL}is it?"}]}]
    ).decode()  # JSON text whose string escapes NUL as \u0000
    return [
        _span(ROOT, name=f"invoke_agent a{NUL}b", attributes=[
            ("gen_ai.operation.name", _text("invoke_agent")),
            ("gen_ai.conversation.id", _text("conv-nul")),
            ("gen_ai.input.messages", _text(messages)),
            ("gen_ai.output.messages", _text(f'[{{"role": "assistant", "parts": [{{"type": '
                                             f'"text", "content": "raw{NUL}nul"}}]}}]')),
        ], status={"code": 2, "message": f"bro{NUL}ken"}),
        _span("1000000000000001", parent=ROOT, attributes=[
            ("array", {"arrayValue": {"values": [_text("ok"), _text(f"a{NUL}b")]}}),
        ]),
        _span("1000000000000002", parent=ROOT, attributes=[
            ("map", {"kvlistValue": {"values": [
                {"key": f"k{NUL}ey", "value": _text(f"v{NUL}alue")},
                {"key": "deep", "value": {"arrayValue": {"values": [
                    {"kvlistValue": {"values": [{"key": "x", "value": _text(NUL)}]}}]}}},
            ]}}),
        ]),
        _span("1000000000000003", parent=ROOT, events=[
            {"name": f"exc{NUL}eption", "timeUnixNano": str(T0), "attributes": [
                {"key": "frames", "value": {"arrayValue": {"values": [_text(f"f{NUL}1")]}}},
                {"key": f"exception{NUL}.type", "value": _text("E")},
            ]},
        ]),
        _span("1000000000000004", parent=ROOT, name="execute_tool t", attributes=[
            ("gen_ai.operation.name", _text("execute_tool")),
            ("gen_ai.tool.name", _text(f"t{NUL}")),
            ("gen_ai.tool.call.arguments", _text('{"q\\u0000": "a\\u0000b", "n": ["\\u0000"]}')),
            ("gen_ai.tool.call.result", _text('["\\\\u0000 stays"]')),
        ]),
        _span("1000000000000005", parent=ROOT, name=f"plain{NUL}"),
    ]  # fmt: skip


@pytest.mark.parametrize("content_type", [otlp.JSON, otlp.PROTOBUF])
def test_a_nul_anywhere_is_cleaned_and_every_span_recorded(writer, content_type):
    resource = [("service.name", _text(f"svc{NUL}")),
                ("nested", {"kvlistValue": {"values": [{"key": NUL, "value": _text(NUL)}]}})]  # fmt: skip
    response = _post(writer, _body(*_nul_spans(), resource=resource), content_type=content_type)
    partial = _partial(response, content_type)
    assert partial.rejected_spans == 0 and partial.error_message == ""
    steps = {step.id: step for step in RunStep.objects.all()}
    assert len(steps) == 6 and not PendingSpan.objects.exists()
    assert steps[ROOT].name == "invoke_agent ab" and steps[ROOT].error == f"bro{BAD}ken"
    assert steps["1000000000000001"].attributes["array"] == ["ok", f"a{BAD}b"]
    assert steps["1000000000000002"].attributes["map"] == {
        "key": f"v{BAD}alue", "deep": [{"x": BAD}]}  # fmt: skip
    event = steps["1000000000000003"].attributes["otel.events"][0]
    assert event["name"] == f"exc{BAD}eption"
    assert event["attributes"] == {"frames": [f"f{BAD}1"], "exception.type": "E"}
    tool = steps["1000000000000004"]
    assert tool.tool_name == f"t{BAD}"
    assert tool.input == {f"q{BAD}": f"a{BAD}b", "n": [BAD]}
    assert tool.output == ["\\u0000 stays"]  # an escaped backslash, not a NUL
    assert steps["1000000000000005"].name == "plain"
    assert steps[ROOT].attributes["service.name"] == f"svc{BAD}"
    assert Conversation.objects.get().title == f"where{BAD}is it?"
    assert {m.role: m.parts[0]["text"] for m in Message.objects.all()} == {
        "user": f"where{BAD}is it?", "assistant": f"raw{BAD}nul"}  # fmt: skip


def test_the_python_sdk_exports_nul_values_and_every_span_is_recorded(
    live_server, writer, monkeypatch
):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{live_server.url}/v1/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{writer.raw_key}")
    warm_up(live_server.url)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("tests.nul")
    with tracer.start_as_current_span(
        "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.arguments": '{"order": "10\\u000042"}',
                "tags": ["fine", f"bad{NUL}tag"],
            },
        ) as span:
            span.add_event(f"retry{NUL}", {"codes": [f"E{NUL}1", "E2"]})
        with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
            pass
    assert provider.force_flush(10_000)
    provider.shutdown()
    steps = {step.name: step for step in RunStep.objects.all()}
    assert set(steps) == {"invoke_agent support", "execute_tool lookup", "chat"}
    tool = steps["execute_tool lookup"]
    assert tool.input == {"order": f"10{BAD}42"}
    assert tool.attributes["tags"] == ["fine", f"bad{BAD}tag"]
    assert tool.attributes["otel.events"][0]["name"] == f"retry{BAD}"
    assert tool.attributes["otel.events"][0]["attributes"] == {"codes": [f"E{BAD}1", "E2"]}
    assert Run.objects.count() == 1


# --- Limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [otlp.JSON, otlp.PROTOBUF])
def test_a_span_over_a_limit_is_refused_alone_naming_the_limit(writer, monkeypatch, content_type):
    monkeypatch.setattr("apps.activity.otlp.decoding.MAX_ATTRIBUTES_PER_SPAN", 5)
    monkeypatch.setattr("apps.activity.otlp.decoding.MAX_EVENTS_PER_SPAN", 3)
    monkeypatch.setattr("apps.activity.otlp.decoding.MAX_ATTRIBUTES_PER_EVENT", 2)
    many = [(f"a{index}", _text("x")) for index in range(6)]
    event = {"name": "e", "timeUnixNano": str(T0), "attributes": []}
    wide_event = {**event, "attributes": [{"key": f"k{i}", "value": _text("v")} for i in range(3)]}
    spans = [
        _span(ROOT),
        _span("1000000000000001", parent=ROOT, attributes=many[:5]),  # at the limit: kept
        _span("1000000000000002", parent=ROOT, attributes=many),
        _span("1000000000000003", parent=ROOT, events=[event] * 3),  # at the limit: kept
        _span("1000000000000004", parent=ROOT, events=[event] * 4),
        _span("1000000000000005", parent=ROOT, events=[wide_event]),
    ]
    partial = _partial(_post(writer, _body(*spans), content_type=content_type), content_type)
    assert partial.rejected_spans == 3
    assert "6 attributes, over the limit of 5 attributes per span" in partial.error_message
    assert "4 events, over the limit of 3 events per span" in partial.error_message
    assert "over the limit of 2 attributes per event" in partial.error_message
    assert set(RunStep.objects.values_list("id", flat=True)) == {
        ROOT, "1000000000000001", "1000000000000003"}  # fmt: skip


def test_spans_past_the_limit_per_request_are_refused_before_they_are_read(writer, monkeypatch):
    monkeypatch.setattr("apps.activity.otlp.decoding.MAX_SPANS_PER_REQUEST", 3)
    spans = [_span(ROOT)] + [_span(f"100000000000000{i}", parent=ROOT) for i in range(1, 4)]
    spans.append({"spanId": "not even a span"})  # past the limit: never parsed
    partial = _partial(_post(writer, _body(*spans)), otlp.JSON)
    assert partial.rejected_spans == 2
    assert "more than 3 spans in one request (the limit of spans per request)" in (
        partial.error_message
    )
    assert RunStep.objects.count() == 3


def test_spans_nesting_past_the_depth_limit_are_refused(writer, monkeypatch):
    monkeypatch.setattr("apps.activity.tracing.placing.MAX_SPAN_DEPTH", 4)
    chain = [ROOT] + [f"10000000000000{i:02x}" for i in range(1, 7)]
    spans = [_span(chain[0])] + [_span(chain[i], parent=chain[i - 1]) for i in range(1, 7)]
    partial = _partial(_post(writer, _body(*reversed(spans))), otlp.JSON)
    assert partial.rejected_spans == 3  # levels 4, 5 and 6 below the root
    assert "nests deeper than 4 levels (the limit of span depth)" in partial.error_message
    assert set(RunStep.objects.values_list("id", flat=True)) == set(chain[:4])


def test_a_trace_holds_a_bounded_number_of_waiting_spans(writer, monkeypatch):
    monkeypatch.setattr("apps.activity.tracing.waiting.MAX_PENDING_SPANS_PER_TRACE", 3)
    missing = "ffffffffffffff01"
    first = [_span(f"100000000000000{i}", parent=missing) for i in range(1, 3)]
    assert _partial(_post(writer, _body(*first)), otlp.JSON).rejected_spans == 0
    more = [_span(f"200000000000000{i}", parent=missing) for i in range(1, 4)]
    partial = _partial(_post(writer, _body(*more)), otlp.JSON)
    assert partial.rejected_spans == 2
    assert "already has 3 spans waiting for their parents" in partial.error_message
    assert PendingSpan.objects.count() == 3
    # The parent arrives: everything that waited is placed.
    _post(writer, _body(_span(missing, parent=ROOT), _span(ROOT)))
    assert RunStep.objects.count() == 5 and not PendingSpan.objects.exists()


# --- A lock held elsewhere -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_request_waiting_on_a_lock_is_cancelled_and_answered_503(
    make_api, agent, settings, caplog
):
    settings.DATABASE_REQUEST_TIMEOUT_SECONDS = 1
    writer = make_api(scopes=["activity:write"])
    holder = connections.create_connection("default")
    holder.ensure_connection()
    # Without a time limit the request would wait as long as the lock is held: 15 s here.
    release = threading.Timer(15, holder.connection.execute, ["SELECT pg_advisory_unlock_all()"])
    try:
        with holder.cursor() as cursor:  # another session holds this trace's lock
            cursor.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, 25))", [f"{agent.pk}:{TRACE}"]
            )
        release.start()
        response = _post(writer, _body(_span(ROOT)), content_type=otlp.PROTOBUF)
        assert response.status == 503 and response.headers["Retry-After"] == "5"
        assert response.headers["Content-Type"] == otlp.PROTOBUF
        status = Status()
        status.ParseFromString(response.body)
        assert status.code == Code.UNAVAILABLE
        assert "database time limit of the request reached: QueryCanceled" in caplog.text
        assert not RunStep.objects.exists()
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")
        # The lock released, the exporter's retry records the span.
        assert _post(writer, _body(_span(ROOT))).json() == {}
        assert RunStep.objects.filter(id=ROOT).exists()
    finally:
        release.cancel()
        holder.close()


def test_a_process_records_a_bounded_volume_of_otlp_at_once(writer, settings):
    """A request that would take the bytes in flight past the limit is answered at once 503
    with Retry-After (exporters retry), while another holds the budget; alone, any size is
    admitted."""
    settings.OTLP_BYTES_IN_FLIGHT = 1024
    body = _body(*[_span(f"100000000000{i:04x}", parent=ROOT) for i in range(1, 40)], _span(ROOT))
    with otlp.IN_FLIGHT.admit(100, limit=1024):  # a request of another thread, in flight
        busy = _post(writer, body, content_type=otlp.PROTOBUF)
        assert busy.status == 503 and busy.headers["Retry-After"] == "1"
        status = Status()
        status.ParseFromString(busy.body)
        assert status.code == Code.UNAVAILABLE
        assert "limit of 1024 bytes in flight per process (OTLP_BYTES_IN_FLIGHT)" in status.message
        small = _post(writer, _body(_span("2000000000000001")))
        assert small.status == 200  # fits beside it
    assert not RunStep.objects.filter(id=ROOT).exists()
    assert _post(writer, body).status == 200 and otlp.IN_FLIGHT.bytes == 0
    assert RunStep.objects.count() == 41
