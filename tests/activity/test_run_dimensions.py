"""A run's dimensions (environment, release, tags, metadata): recorded from /v1/ingest and from
the OpenTelemetry Python SDK, served as GET /v1/runs/{id}/attributes (the run object keeps the
contract's fields), and filtering /v1/runs and /v1/conversations. Every /v1 list refuses a
query parameter it does not take, by name."""

import pytest
from django.test import Client

from apps.activity.models import Run
from tests.activity.test_otlp_ai_sdk import warm_up
from tests.activity.test_services_recording import base_records

pytestmark = pytest.mark.django_db

RUN_FIELDS = {
    "object", "id", "conversation_id", "user_id", "request_id", "status", "model_id", "effort",
    "sdk_version", "protocol_version", "input_tokens", "output_tokens", "total_tokens",
    "cache_read_tokens", "cache_write_tokens", "credits_charged", "tool_names",
    "failed_tool_names", "component_kinds", "error_code", "first_chunk_at", "completed_at",
    "total_turn_latency_ms", "created_at", "updated_at",
}  # fmt: skip


def _ids(client, path: str, **params) -> list[str]:
    answer = client.get(path, params=params)
    assert answer.status == 200, (path, params, answer.body)
    return [item["id"] for item in answer.json()["data"]]


def _two_runs() -> list[dict]:
    records = base_records()
    records[3].update(
        environment="production",
        release="1.4.2",
        tags=["vip", "beta", "vip"],
        metadata={"tier": "gold", "seats": 12, "trial": False},
    )
    records += [
        {"type": "conversation", "id": "conv_2", "created_at": "2025-01-31T13:00:00Z"},
        {"type": "run", "id": "run_2", "conversation_id": "conv_2", "request_id": "req_2",
         "sdk_version": "5.0.0", "created_at": "2025-01-31T13:00:01Z",
         "environment": "staging", "release": "1.5.0", "tags": ["beta"],
         "metadata": {"tier": "free", "seats": 1}},
    ]  # fmt: skip
    return records


def test_ingest_records_the_dimensions_as_their_own_object(make_api):
    client = make_api()
    assert client.post("/v1/ingest", json=_two_runs()).status == 200

    attributes = client.get("/v1/runs/run_1/attributes").json()
    assert attributes == {
        "object": "run_attributes",
        "run_id": "run_1",
        "environment": "production",
        "release": "1.4.2",
        "tags": ["vip", "beta"],  # a set: the repeated tag once
        "metadata": {"tier": "gold", "seats": 12, "trial": False},
    }
    # The contract's run object keeps exactly its fields.
    assert set(client.get("/v1/runs/run_1").json()) == RUN_FIELDS
    assert all(set(run) == RUN_FIELDS for run in client.get("/v1/runs").json()["data"])
    assert client.get("/v1/runs/run_404/attributes").status == 404

    # A later record replaces what it sends and keeps the rest.
    update = {"type": "run", "id": "run_1", "tags": ["escalated"], "environment": None}
    assert client.post("/v1/ingest", json=[update]).status == 200
    attributes = client.get("/v1/runs/run_1/attributes").json()
    assert (attributes["environment"], attributes["release"]) == (None, "1.4.2")
    assert attributes["tags"] == ["escalated"]
    assert attributes["metadata"]["tier"] == "gold"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tags", [f"t{n}" for n in range(21)], "At most 20 tags"),
        ("tags", ["x" * 65], "1 to 64 characters"),
        ("tags", "vip", "JSON array"),
        ("metadata", {"nested": {"a": 1}}, "nested: must be a string"),
        ("metadata", {"list": [1]}, "list: must be a string"),
        ("metadata", {"long": "x" * 257}, "at most 256 characters"),
        ("metadata", {f"k{n}": n for n in range(33)}, "At most 32 keys"),
        ("environment", "e" * 65, "64"),
        ("release", 142, ""),
    ],
)
def test_dimensions_past_their_bounds_are_400_naming_the_field_and_keep_nothing(
    make_api, field, value, message
):
    client = make_api(scopes=["activity:write"])
    records = base_records()
    records[3][field] = value
    answer = client.post("/v1/ingest", json=records)
    assert answer.status == 400
    assert answer.json()["message"].startswith(f"records[3].{field}:")
    assert message in answer.json()["message"]
    assert not Run.objects.exists()


def test_runs_and_conversations_filter_by_every_dimension(make_api):
    client = make_api()
    assert client.post("/v1/ingest", json=_two_runs()).status == 200
    cases = {
        "environment": ("production", "staging", "nowhere"),
        "release": ("1.4.2", "1.5.0", "0.0.1"),
        "tag": ("vip", None, "nothing"),
        "metadata": ("tier:gold", "seats:1", "tier:platinum"),
    }
    for name, (first, second, none) in cases.items():
        assert _ids(client, "/v1/runs", **{name: first}) == ["run_1"], name
        assert _ids(client, "/v1/conversations", **{name: first}) == ["conv_1"], name
        if second is not None:
            assert _ids(client, "/v1/runs", **{name: second}) == ["run_2"], name
            assert _ids(client, "/v1/conversations", **{name: second}) == ["conv_2"], name
        assert _ids(client, "/v1/runs", **{name: none}) == [], name
        assert _ids(client, "/v1/conversations", **{name: none}) == [], name
    assert _ids(client, "/v1/runs", tag="beta") == ["run_2", "run_1"]
    assert _ids(client, "/v1/runs", tag="beta", environment="staging") == ["run_2"]
    assert _ids(client, "/v1/runs", metadata="trial:false") == ["run_1"]
    assert _ids(client, "/v1/runs", metadata="seats:12", release="1.4.2") == ["run_1"]
    # On conversations, one run meets every filter: no run is production and 1.5.0.
    assert _ids(client, "/v1/conversations", environment="production", release="1.5.0") == []


def test_malformed_filters_are_400_naming_them(make_api):
    client = make_api(scopes=["runs:read", "conversations:read"])
    for path in ("/v1/runs", "/v1/conversations"):
        answer = client.get(path, params={"metadata": "tier"})
        assert answer.status == 400 and answer.json()["message"].startswith("metadata "), path
        answer = client.get(path, params={"status": "done"})
        assert answer.status == 400 and answer.json()["message"].startswith("status "), path


def _list_operations(document: dict):
    """(path, query parameter names) of every GET operation answering a list envelope."""
    schemas = document["components"]["schemas"]
    for path, item in document["paths"].items():
        operation = item.get("get")
        if operation is None:
            continue
        content = operation["responses"].get("200", {}).get("content", {})
        schema = content.get("application/json", {}).get("schema", {})
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
        if "has_more" not in schema.get("properties", {}):
            continue
        names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        yield path, names


def test_every_list_refuses_an_unknown_query_parameter_naming_it(api, agent, settings):
    settings.API_RATE_LIMIT = "1000000/minute"
    document = Client().get("/v1/openapi.json").json()
    operations = list(_list_operations(document))
    paths = {path for path, _names in operations}
    assert {"/v1/runs", "/v1/conversations", "/v1/users", "/v1/knowledge"} <= paths
    assert "/v1/agents/{agentId}/webhook/deliveries" in paths
    for path, names in operations:
        assert {"limit", "after"} <= names, path
        if path.startswith("/v1/me/"):
            continue  # browser tokens only (an API key is 403 first); the same check applies
        concrete = path.replace("{agentId}", agent.pk).replace("{id}", "x")
        for unknown in ("tenant", "q_", "metadata.tier"):
            if unknown in names:
                continue
            answer = api.get(concrete, params={unknown: "1", "limit": "5"})
            assert answer.status == 400, (path, unknown, answer.status)
            message = answer.json()["message"]
            assert message.startswith(f"Unknown query parameter: {unknown}."), (path, message)
    # The documented filters are accepted (and so documented: the document is the table).
    runs = dict(operations)["/v1/runs"]
    assert {"environment", "release", "tag", "metadata", "model_id", "tool_name"} <= runs
    assert {"status", "error_code", "created_after", "created_before", "user_id"} <= runs
    conversations = dict(operations)["/v1/conversations"]
    assert {"environment", "release", "tag", "metadata", "model_id", "tool_name"} <= conversations


# --- OpenTelemetry: the Python SDK's own exporter against a live server ------------------------


def _export_turn(*, environment_key: str, environment: str, version: str, fail: bool) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create(
        {"service.name": "support-bot", environment_key: environment, "service.version": version}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("tests.dimensions")
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": f"conv-{environment}",
        "ai.telemetry.metadata.tier": "gold" if fail else "free",
        "ai.telemetry.metadata.seats": 12,
        "ai.telemetry.metadata.tags": ["vip", "beta"] if fail else ["beta"],
        "ai.telemetry.metadata.userId": "customer-7",
    }
    with tracer.start_as_current_span(
        "invoke_agent support", attributes=attributes, record_exception=True,
        set_status_on_exception=True,
    ):  # fmt: skip
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            pass
        if fail:
            try:
                raise TimeoutError("the order service did not answer in 30 s")
            except TimeoutError as exc:
                from opentelemetry import trace
                from opentelemetry.trace import Status, StatusCode

                span = trace.get_current_span()
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
    assert provider.force_flush(10_000)
    provider.shutdown()


@pytest.mark.django_db(transaction=True)
def test_the_python_sdk_maps_resource_and_metadata_attributes_and_they_filter(
    live_server, make_api, monkeypatch
):
    writer = make_api(scopes=["activity:write"])
    reader = make_api(scopes=["runs:read", "conversations:read"])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{live_server.url}/v1/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{writer.raw_key}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60")
    warm_up(live_server.url)

    _export_turn(
        environment_key="deployment.environment.name",
        environment="production",
        version="1.4.2",
        fail=True,
    )
    # The older attribute name (before semantic conventions 1.27) maps the same way.
    _export_turn(
        environment_key="deployment.environment", environment="staging", version="1.5.0", fail=False
    )

    runs = {run["conversation_id"]: run for run in reader.get("/v1/runs").json()["data"]}
    failed, passed = runs["conv-production"], runs["conv-staging"]
    attributes = reader.get(f"/v1/runs/{failed['id']}/attributes").json()
    assert attributes == {
        "object": "run_attributes",
        "run_id": failed["id"],
        "environment": "production",
        "release": "1.4.2",
        "tags": ["vip", "beta"],
        # userId names the run's user; every other telemetry metadata key is kept.
        "metadata": {"tier": "gold", "seats": 12},
    }
    assert reader.get(f"/v1/runs/{passed['id']}/attributes").json()["environment"] == "staging"

    # error_code is a code (the exception's type); the message is the step's error.
    assert failed["status"] == "failed" and failed["error_code"] == "TimeoutError"
    root = reader.get(f"/v1/runs/{failed['id']}/steps").json()["data"][0]
    assert root["error"] == "the order service did not answer in 30 s"
    assert passed["error_code"] is None

    for name, value, expected in [
        ("environment", "production", failed),
        ("environment", "staging", passed),
        ("release", "1.5.0", passed),
        ("tag", "vip", failed),
        ("metadata", "tier:gold", failed),
        ("metadata", "seats:12", None),
        ("error_code", "TimeoutError", failed),
    ]:
        wanted = [failed["id"], passed["id"]] if expected is None else [expected["id"]]
        assert sorted(_ids(reader, "/v1/runs", **{name: value})) == sorted(wanted), name
        conversations = [failed["conversation_id"], passed["conversation_id"]]
        if expected is not None:
            conversations = [expected["conversation_id"]]
        found = _ids(reader, "/v1/conversations", **{name: value})
        assert sorted(found) == sorted(conversations), name
