"""OpenTelemetry traces (OTLP/HTTP): the request body and its spans decoded, no database access.

The wire format is the official `opentelemetry-proto` package's: binary protobuf is parsed as an
`ExportTraceServiceRequest`; OTLP/JSON (ids in hex, as the OTLP specification says) is walked
down to each span, whose ids are turned into protobuf's base64 so the same package parses it. A
span is decoded on its own: a bad span is rejected with a reason and never takes the other spans
of its request with it (partial success).

Each span becomes a `SpanData`, a JSON-able dict (it is what a span waiting for its parent
stores), which apps.activity.span_mapping maps onto a step of a run.

One module per subject: `body` (the request's media type and gzip, the answer and the error
answer), `in_flight` (the bytes of OTLP bodies a process takes at once), `decoding` (a request
into spans, each checked against the limits), `values` (attribute values as JSON, NUL cleaned),
`span_data` (a decoded span and its times). Callers import from `apps.activity.otlp`; the names
below are its public face.
"""

from apps.activity.otlp.body import (
    JSON,
    PROTOBUF,
    body_inflate,
    content_kind,
    error_as_status,
    response_body,
)
from apps.activity.otlp.decoding import (
    MAX_ATTRIBUTES_PER_EVENT,
    MAX_ATTRIBUTES_PER_SPAN,
    MAX_EVENTS_PER_SPAN,
    MAX_SPANS_PER_REQUEST,
    Decoded,
    request_decode,
)
from apps.activity.otlp.in_flight import IN_FLIGHT, InFlight
from apps.activity.otlp.span_data import SpanData, nanos_datetime, started_at
from apps.activity.otlp.values import MAX_DECODED_STRING, json_cleaned

__all__ = [
    "IN_FLIGHT",
    "JSON",
    "MAX_ATTRIBUTES_PER_EVENT",
    "MAX_ATTRIBUTES_PER_SPAN",
    "MAX_DECODED_STRING",
    "MAX_EVENTS_PER_SPAN",
    "MAX_SPANS_PER_REQUEST",
    "PROTOBUF",
    "Decoded",
    "InFlight",
    "SpanData",
    "body_inflate",
    "content_kind",
    "error_as_status",
    "json_cleaned",
    "nanos_datetime",
    "request_decode",
    "response_body",
    "started_at",
]
