"""Recording activity through the API (extension): POST /v1/ingest (records as JSON) and
OTLP/HTTP traces (POST /v1/otlp/v1/traces)."""

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, PolymorphicProxySerializer, extend_schema

from apps.activity import events as activity_events
from apps.activity import otlp
from apps.activity.records import RECORD_SERIALIZERS, records_parse
from apps.activity.serializers import IngestResultOut
from apps.activity.services import activity_record
from apps.activity.tracing import spans_record
from apps.api.parsing import IngestJsonParser
from apps.api.views import json_response
from apps.common.errors import PayloadTooLarge
from apps.workspaces.viewsets import AgentViewSet

IngestRecord = PolymorphicProxySerializer(
    component_name="IngestRecord",
    # Activity's own kinds, and those other apps registered (ready() ran before URLs load).
    serializers=[*RECORD_SERIALIZERS.values(), *activity_events.ingest_kind_schemas()],
    resource_type_field_name="type",
    many=True,
)

_INGEST_EXAMPLE: list[dict[str, Any]] = [
    {
        "type": "user",
        "id": "usr_01JD0000000000000000000001",
        "external_id": "customer-42",
        "identity_type": "user",
        "display_name": "Ada Lovelace",
        "email": "ada@example.com",
        "last_seen_at": "2025-01-31T12:00:00Z",
    },
    {
        "type": "conversation",
        "id": "conv_01JD0000000000000000000001",
        "user_id": "usr_01JD0000000000000000000001",
        "title": "Refund for order 1042",
        "source": "embed",
        "status": "streaming",
        "created_at": "2025-01-31T12:00:00Z",
    },
    {
        "type": "message",
        "id": "msg_01JD0000000000000000000001",
        "conversation_id": "conv_01JD0000000000000000000001",
        "role": "user",
        "parts": [{"type": "text", "text": "Where is my refund?"}],
        "created_at": "2025-01-31T12:00:01Z",
    },
    {
        "type": "run",
        "id": "run_01JD0000000000000000000001",
        "conversation_id": "conv_01JD0000000000000000000001",
        "request_id": "req_8f2c",
        "status": "completed",
        "model_id": "gpt-4.1-mini",
        "sdk_version": "5.0.12",
        "protocol_version": 1,
        "input_tokens": 1830,
        "output_tokens": 212,
        "total_tokens": 2042,
        "credits_charged": 0.42,
        "tool_names": ["lookup_order"],
        "created_at": "2025-01-31T12:00:01Z",
        "completed_at": "2025-01-31T12:00:04Z",
        "total_turn_latency_ms": 2870,
    },
]


class IngestViewSet(AgentViewSet):
    required_scopes = {"create": "activity:write"}
    extension_actions = ("create",)
    error_statuses = {"create": (413,)}
    openapi_tags = ["Ingest"]
    parser_classes = [IngestJsonParser]

    @extend_schema(
        summary="Record activity (extension)",
        description=(
            "The Agent runtime records what it observes: a JSON array (1 to 1000) of records, "
            "each the contract's resource fields (minus `object`) plus `type`. Records are "
            "upserted by `id` (users also by `external_id`) in order, in one transaction: an "
            "invalid record is a 400 naming `records[i].field` and nothing is kept. A run "
            "moves from `streaming` to `completed`, `failed` or `aborted` once; an ended run "
            "cannot change status again (400). See docs/activity-recording.md."
        ),
        request=IngestRecord,
        responses={200: IngestResultOut},
        examples=[
            OpenApiExample(f"A {record['type']} record", record, request_only=True)
            for record in _INGEST_EXAMPLE
        ],
    )
    def create(self, request, agent_id: str | None = None):
        records = records_parse(request.data)
        result = activity_record(agent=self.agent, records=records)
        return json_response(result.as_dict())


def _raw_body(request, *, limit: int) -> bytes:
    """The request body, at most `limit` bytes. A chunked one (OpenTelemetry's Node exporter
    always sends them) arrives decoded and sized (apps.api.middleware.HttpEdgesMiddleware)."""
    body = request.read(limit + 1)
    if len(body) > limit:
        raise PayloadTooLarge(f"The body is larger than {limit} bytes.")
    return body


class OtlpTracesViewSet(AgentViewSet):
    """OTLP/HTTP traces: `OTEL_EXPORTER_OTLP_ENDPOINT=<base>/v1/otlp` and the exporter's own
    `/v1/traces` lands here. The body is read raw (no DRF parser): its Content-Type picks the
    OTLP encoding."""

    required_scopes = {"create": "activity:write"}
    extension_actions = ("create",)
    error_statuses = {"create": (413, 415)}
    openapi_tags = ["Ingest"]
    parser_classes: list = []

    @extend_schema(
        summary="Record OpenTelemetry traces (OTLP/HTTP, extension)",
        description=(
            "An OTLP/HTTP traces endpoint: `ExportTraceServiceRequest` as binary protobuf "
            "(`application/x-protobuf`) or OTLP/JSON (`application/json`), optionally "
            "`Content-Encoding: gzip`; the answer is an `ExportTraceServiceResponse` in the same "
            "encoding. Each trace becomes a run (id = the trace id) and each span a step (id = "
            "the span id), mapped from the GenAI semantic conventions (`gen_ai.*`) and the AI "
            "SDK's telemetry (`ai.*`). Spans that cannot be recorded are counted in "
            "`partialSuccess.rejectedSpans` with a reason; the others are kept. At most 10,000 "
            "spans per request. Set OTEL_EXPORTER_OTLP_ENDPOINT to `{base_url}/otlp` and "
            "OTEL_EXPORTER_OTLP_HEADERS to `Authorization=Bearer <API_KEY>` (a key with "
            "`activity:write`). See docs/activity-recording.md."
        ),
        request={otlp.PROTOBUF: OpenApiTypes.BINARY, otlp.JSON: OpenApiTypes.OBJECT},
        responses={200: OpenApiTypes.OBJECT},
    )
    def handle_exception(self, exc):
        # Every failure, authentication and rate limits included, as OTLP/HTTP answers it.
        response = super().handle_exception(exc)
        return otlp.error_as_status(response, content_type=self.request.content_type)

    def create(self, request, agent_id: str | None = None):
        kind = otlp.content_kind(request.content_type)
        limit = settings.API_MAX_INGEST_BODY_BYTES
        raw = _raw_body(request._request, limit=limit)
        body = otlp.body_inflate(raw, encoding=request.headers.get("Content-Encoding"), limit=limit)
        with otlp.IN_FLIGHT.admit(len(body), limit=settings.OTLP_BYTES_IN_FLIGHT):
            decoded = otlp.request_decode(body, kind=kind)
            result = spans_record(agent=self.agent, spans=decoded.spans)
        rejected = decoded.rejected + result.rejected
        message = " ".join([*decoded.errors, *result.errors][:5])
        content, content_type = otlp.response_body(kind=kind, rejected=rejected, message=message)
        return HttpResponse(content, status=200, content_type=content_type)
