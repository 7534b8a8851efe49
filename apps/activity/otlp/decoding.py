"""An OTLP traces request decoded into spans (`SpanData`), each on its own: a span that is
malformed or asks more than one span may (the limits below) is rejected with a reason, the
others are kept."""

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from apps.activity.otlp.body import PROTOBUF
from apps.activity.otlp.span_data import SpanData
from apps.activity.otlp.values import _attributes, _clean
from apps.common.errors import BadRequest

# What one request may ask of the server (docs/activity-recording.md, "Limits"). A span over a
# per-span limit is refused alone (partial success, the OTLP/HTTP answer to bad data in an
# otherwise good request); spans past MAX_SPANS_PER_REQUEST are refused the same way.
MAX_SPANS_PER_REQUEST = 10_000
MAX_ATTRIBUTES_PER_SPAN = 1_000
MAX_EVENTS_PER_SPAN = 1_000
MAX_ATTRIBUTES_PER_EVENT = 1_000


@dataclass
class Decoded:
    spans: list[SpanData]
    rejected: int
    errors: list[str]

    def reject(self, message: str) -> None:
        self.rejected += 1
        if len(self.errors) < 5:
            self.errors.append(message)


def request_decode(body: bytes, *, kind: str) -> Decoded:
    """Every span of an OTLP traces request, each decoded on its own."""
    decoded = Decoded(spans=[], rejected=0, errors=[])
    if kind == PROTOBUF:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError):
            raise BadRequest(
                "Malformed protobuf: the body is not an OTLP ExportTraceServiceRequest."
            ) from None
        for resource_spans in request.resource_spans:
            resource = _resource_kept(_attributes(resource_spans.resource.attributes))
            for scope_spans in resource_spans.scope_spans:
                scope = scope_spans.scope.name
                for index, span in enumerate(scope_spans.spans):
                    if not _over_span_limit(decoded, f"span {index}"):
                        _add(decoded, span, resource=resource, scope=scope, where=f"span {index}")
        return decoded
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Malformed JSON: {exc}") from None
    if not isinstance(document, dict):
        raise BadRequest("The body must be a JSON object with resourceSpans.")
    for resource_spans in _items(document, "resourceSpans", "resource_spans"):
        resource = {}
        raw_resource = resource_spans.get("resource")
        if isinstance(raw_resource, dict):
            message = Resource()
            try:
                json_format.ParseDict(raw_resource, message, ignore_unknown_fields=True)
            except (json_format.ParseError, ValueError, TypeError) as exc:
                raise BadRequest(f"resourceSpans[].resource: {_short(exc)}") from None
            resource = _attributes(message.attributes)
        resource = _resource_kept(resource)
        for scope_spans in _items(resource_spans, "scopeSpans", "scope_spans"):
            scope = scope_spans.get("scope")
            scope_name = scope.get("name", "") if isinstance(scope, dict) else ""
            for index, raw_span in enumerate(_items(scope_spans, "spans", "spans", strict=False)):
                where = f"span {index}"
                if _over_span_limit(decoded, where):
                    continue
                if not isinstance(raw_span, dict):
                    decoded.reject(f"{where}: must be a JSON object.")
                    continue
                span = Span()
                try:
                    json_format.ParseDict(
                        _ids_as_base64(raw_span), span, ignore_unknown_fields=True
                    )
                except (json_format.ParseError, ValueError, TypeError, binascii.Error) as exc:
                    decoded.reject(f"{where}: {_short(exc)}")
                    continue
                _add(decoded, span, resource=resource, scope=str(scope_name), where=where)
    return decoded


# --- One span ------------------------------------------------------------------------------------


def _items(container: dict, camel: str, snake: str, *, strict: bool = True) -> list:
    value = container.get(camel, container.get(snake, []))
    if not isinstance(value, list):
        raise BadRequest(f"{camel} must be an array.")
    return [item for item in value if isinstance(item, dict)] if strict else value


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def _hex_to_base64(value: Any, name: str) -> Any:
    if not isinstance(value, str) or value == "":
        return value
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{name} must be hex; got {value[:40]!r}.") from None
    return base64.b64encode(raw).decode()


def _ids_as_base64(span: dict) -> dict:
    """OTLP/JSON writes ids in hex; protobuf's JSON mapping reads bytes as base64."""
    span = dict(span)
    for camel, snake in (("traceId", "trace_id"), ("spanId", "span_id"),
                         ("parentSpanId", "parent_span_id")):  # fmt: skip
        for name in (camel, snake):
            if name in span:
                span[name] = _hex_to_base64(span[name], camel)
    links = span.get("links")
    if isinstance(links, list):
        span["links"] = [
            {**link, **{key: _hex_to_base64(link[key], key) for key in ("traceId", "spanId")
                        if key in link}}
            if isinstance(link, dict) else link
            for link in links
        ]  # fmt: skip
    return span


_RESOURCE_KEPT = ("service.name", "telemetry.sdk.name", "telemetry.sdk.language",
                  "telemetry.sdk.version", "service.version", "deployment.environment",
                  "deployment.environment.name")  # fmt: skip


def _resource_kept(resource: dict[str, Any]) -> dict[str, Any]:
    """The resource attributes a span keeps (once per resource, not per span)."""
    return {key: value for key, value in resource.items() if key in _RESOURCE_KEPT}


def _time(nanos: int) -> str | None:
    return str(nanos) if nanos else None


def _over_span_limit(decoded: Decoded, where: str) -> bool:
    """Whether the request already holds MAX_SPANS_PER_REQUEST spans: then this one is refused
    before it is parsed any further."""
    if len(decoded.spans) < MAX_SPANS_PER_REQUEST:
        return False
    decoded.reject(
        f"{where}: more than {MAX_SPANS_PER_REQUEST} spans in one request (the limit of spans "
        "per request); the rest are not recorded (lower OTEL_BSP_MAX_EXPORT_BATCH_SIZE)."
    )
    return True


def _over_limits(span: Span, where: str) -> str | None:
    """Why the span asks more than one span may (attributes, events), if it does."""
    span_id = span.span_id.hex()
    if len(span.attributes) > MAX_ATTRIBUTES_PER_SPAN:
        return (
            f"{where}: span {span_id} has {len(span.attributes)} attributes, over the limit of "
            f"{MAX_ATTRIBUTES_PER_SPAN} attributes per span."
        )
    if len(span.events) > MAX_EVENTS_PER_SPAN:
        return (
            f"{where}: span {span_id} has {len(span.events)} events, over the limit of "
            f"{MAX_EVENTS_PER_SPAN} events per span."
        )
    for event in span.events:
        if len(event.attributes) > MAX_ATTRIBUTES_PER_EVENT:
            return (
                f"{where}: span {span_id} has an event with {len(event.attributes)} "
                f"attributes, over the limit of {MAX_ATTRIBUTES_PER_EVENT} attributes per event."
            )
    return None


def _add(decoded: Decoded, span: Span, *, resource: dict, scope: str, where: str) -> None:
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or not any(trace_id):
        decoded.reject(f"{where}: traceId must be 16 bytes, not all zero.")
        return
    if len(span_id) != 8 or not any(span_id):
        decoded.reject(f"{where}: spanId must be 8 bytes, not all zero.")
        return
    if parent and (len(parent) != 8 or not any(parent)):
        decoded.reject(f"{where}: parentSpanId must be empty or 8 bytes, not all zero.")
        return
    if parent == span_id:
        decoded.reject(f"{where}: span {span_id.hex()} names itself as its parent.")
        return
    if not span.start_time_unix_nano:
        decoded.reject(f"{where}: startTimeUnixNano is required.")
        return
    if span.end_time_unix_nano and span.end_time_unix_nano < span.start_time_unix_nano:
        decoded.reject(f"{where}: span {span_id.hex()} ends before it starts.")
        return
    # No time is out of a datetime's range: the largest fixed64 of nanoseconds falls in 2554
    # (tests/activity/test_otlp.py, the last instant a span time can name).
    over = _over_limits(span, where)
    if over is not None:
        decoded.reject(over)
        return
    events = []
    for event in span.events[:100]:
        events.append(
            {"name": _clean(event.name), "time": _time(event.time_unix_nano),
             "attributes": _attributes(event.attributes)}
        )  # fmt: skip
    decoded.spans.append(
        {
            "trace_id": trace_id.hex(),
            "span_id": span_id.hex(),
            "parent_span_id": parent.hex() if parent else None,
            "name": span.name.replace("\x00", "")[:255] or "span",
            "start": str(span.start_time_unix_nano),
            "end": _time(span.end_time_unix_nano),
            "status": span.status.code,
            "status_message": _clean(span.status.message),
            "attributes": _attributes(span.attributes),
            "events": events,
            "resource": dict(resource),  # already `_resource_kept`
            "scope": scope.replace("\x00", "")[:255],
        }
    )
