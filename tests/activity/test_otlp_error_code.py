"""A failed run recorded over OTLP carries a code in `error_code`, never the message (issue 36,
item 5): the exception's type, else the span's `error.type` attribute, else the status code's
name; the message is the root step's `error`. Spans from the OpenTelemetry Python SDK's own
exporter against a live server."""

import pytest

from tests.activity.test_otlp_ai_sdk import warm_up

pytestmark = pytest.mark.django_db(transaction=True)


def _export_failed_turns() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("tests.error_code")
    turns = [
        ("conv-typed", {"error.type": "rate_limited"}, "the model said 429"),
        ("conv-status", {}, "the tool crashed"),
        ("conv-raised", {"error.type": "ignored: the exception names it"}, None),
    ]
    for conversation_id, extra, description in turns:
        attributes = {"gen_ai.operation.name": "invoke_agent",
                      "gen_ai.conversation.id": conversation_id, **extra}  # fmt: skip
        with tracer.start_as_current_span(
            "invoke_agent support", attributes=attributes, record_exception=True,
            set_status_on_exception=True,
        ) as span:  # fmt: skip
            if description is not None:
                span.set_status(Status(StatusCode.ERROR, description))
            else:
                try:
                    raise ConnectionResetError("the order service hung up")
                except ConnectionResetError as exc:
                    span.record_exception(exc)
                    span.set_status(Status(StatusCode.ERROR, str(exc)))
    assert provider.force_flush(10_000)
    provider.shutdown()


def test_otlp_error_codes_are_codes_and_messages_go_to_the_step(live_server, make_api, monkeypatch):
    writer = make_api(scopes=["activity:write"])
    reader = make_api(scopes=["runs:read"])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{live_server.url}/v1/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{writer.raw_key}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60")
    warm_up(live_server.url)

    _export_failed_turns()

    runs = {run["conversation_id"]: run for run in reader.get("/v1/runs").json()["data"]}
    expected = {
        "conv-typed": ("rate_limited", "the model said 429"),
        "conv-status": ("ERROR", "the tool crashed"),
        "conv-raised": ("ConnectionResetError", "the order service hung up"),
    }
    for conversation_id, (code, message) in expected.items():
        run = runs[conversation_id]
        assert (run["status"], run["error_code"]) == ("failed", code), conversation_id
        (root,) = reader.get(f"/v1/runs/{run['id']}/steps").json()["data"]
        assert root["status"] == "failed" and message in root["error"], conversation_id
        filtered = reader.get("/v1/runs", params={"error_code": code}).json()["data"]
        assert [item["id"] for item in filtered] == [run["id"]], code
