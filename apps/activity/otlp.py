"""OpenTelemetry traces (OTLP/HTTP): the request body and its spans decoded, no database access.

The wire format is the official `opentelemetry-proto` package's: binary protobuf is parsed as an
`ExportTraceServiceRequest`; OTLP/JSON (ids in hex, as the OTLP specification says) is walked
down to each span, whose ids are turned into protobuf's base64 so the same package parses it. A
span is decoded on its own: a bad span is rejected with a reason and never takes the other spans
of its request with it (partial success).

Each span becomes a `SpanData`, a JSON-able dict (it is what a span waiting for its parent
stores), which apps.activity.span_mapping maps onto a step of a run.
"""

import base64
import binascii
import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc.code_pb2 import Code
from google.rpc.status_pb2 import Status as RpcStatus
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from apps.common.errors import (
    BadRequest,
    PayloadTooLarge,
    ServiceUnavailable,
    UnsupportedMediaType,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# A string attribute longer than this is cut before anything else looks at it (the step's own
# bounds, apps.activity.bounds, are smaller, so the cut value is still marked truncated there).
MAX_DECODED_STRING = 64 * 1024
# What one request may ask of the server (docs/activity-recording.md, "Limits"). A span over a
# per-span limit is refused alone (partial success, the OTLP/HTTP answer to bad data in an
# otherwise good request); spans past MAX_SPANS_PER_REQUEST are refused the same way.
MAX_SPANS_PER_REQUEST = 10_000
MAX_ATTRIBUTES_PER_SPAN = 1_000
MAX_EVENTS_PER_SPAN = 1_000
MAX_ATTRIBUTES_PER_EVENT = 1_000
_MAX_ANY_VALUE_DEPTH = 16

SpanData = dict[str, Any]


@dataclass
class Decoded:
    spans: list[SpanData]
    rejected: int
    errors: list[str]

    def reject(self, message: str) -> None:
        self.rejected += 1
        if len(self.errors) < 5:
            self.errors.append(message)


# --- The request body --------------------------------------------------------------------------


def content_kind(content_type: str | None) -> str:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type in (PROTOBUF, JSON):
        return media_type
    raise UnsupportedMediaType(
        f"Send OTLP traces as {PROTOBUF} or {JSON}; got {media_type or 'no Content-Type'!r}."
    )


def body_inflate(body: bytes, *, encoding: str | None, limit: int) -> bytes:
    """The body, gunzipped when `Content-Encoding: gzip`, never larger than `limit` bytes."""
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise UnsupportedMediaType(f"Content-Encoding must be gzip or identity; got {encoding!r}.")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise BadRequest("The body is not valid gzip.") from None
    if len(data) > limit:
        raise PayloadTooLarge(f"The decompressed body is larger than {limit} bytes.")
    if not inflater.eof:
        raise BadRequest("The gzip body is truncated.")
    return data


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


class InFlight:
    """The bytes of OTLP bodies this process is decoding and recording at once. A body that
    would take them over the limit while another is in flight is refused at once with 503 and
    `Retry-After: 1` (exporters retry it, the OTLP/HTTP answer to an overloaded server) instead
    of taking a web thread and a share of the CPU from every other request: a few hostile
    requests of 10,000 spans could otherwise hold every thread. One body alone is always
    admitted, whatever its size; small batches go side by side."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bytes = 0

    @contextmanager
    def admit(self, size: int, *, limit: int) -> Iterator[None]:
        with self._lock:
            if self.bytes and self.bytes + size > limit:
                raise ServiceUnavailable(
                    f"This server is recording {self.bytes} bytes of OTLP requests; with "
                    f"{size} more it would pass its limit of {limit} bytes in flight per "
                    "process (OTLP_BYTES_IN_FLIGHT). Retry after 1 second.",
                    retry_after=1,
                )
            self.bytes += size
        try:
            yield
        finally:
            with self._lock:
                self.bytes -= size


IN_FLIGHT = InFlight()


def response_body(*, kind: str, rejected: int, message: str) -> tuple[bytes, str]:
    """ExportTraceServiceResponse in the request's encoding; partial_success only when spans
    were rejected (the specification's full success is an empty response)."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if kind == PROTOBUF:
        return response.SerializeToString(), PROTOBUF
    return orjson.dumps(json_format.MessageToDict(response)), JSON


# The google.rpc.Code a failed request's Status carries, by HTTP status (the specification
# says clients do not act on it; it is there for troubleshooting).
_RPC_CODES = {
    400: Code.INVALID_ARGUMENT, 401: Code.UNAUTHENTICATED, 403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND, 413: Code.INVALID_ARGUMENT, 415: Code.INVALID_ARGUMENT,
    429: Code.RESOURCE_EXHAUSTED, 500: Code.INTERNAL, 503: Code.UNAVAILABLE,
}  # fmt: skip


def error_as_status(response: Any, *, content_type: str | None) -> Any:
    """A failed request's answer as the OTLP/HTTP specification wants it: a `google.rpc.Status`
    in the request's encoding (binary protobuf for `application/x-protobuf`, else JSON), with
    the same HTTP status and headers (`WWW-Authenticate`, `Retry-After`). The JSON form also
    keeps the API's `name`, so it is both a Status and the usual `{"name", "message"}`."""
    try:
        envelope = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return response
    if not isinstance(envelope, dict) or "message" not in envelope:
        return response
    status = RpcStatus(
        code=_RPC_CODES.get(response.status_code, Code.UNKNOWN), message=str(envelope["message"])
    )
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type == PROTOBUF:
        response.content = status.SerializeToString()
        response["Content-Type"] = PROTOBUF
    else:
        answer = json_format.MessageToDict(status, always_print_fields_with_no_presence=True)
        response.content = orjson.dumps({**answer, "name": envelope.get("name")})
        response["Content-Type"] = JSON
    return response


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


def _value(value: AnyValue, depth: int = 0) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return _clean(value.string_value[:MAX_DECODED_STRING])
    if kind == "bytes_value":
        return value.bytes_value[: MAX_DECODED_STRING // 2].hex()
    if kind in ("bool_value", "int_value", "double_value"):
        return getattr(value, kind)
    if depth >= _MAX_ANY_VALUE_DEPTH:
        return "…"
    if kind == "array_value":
        return [_value(item, depth + 1) for item in value.array_value.values[:1000]]
    return {
        _key(item.key): _value(item.value, depth + 1) for item in value.kvlist_value.values[:1000]
    }


# PostgreSQL text and jsonb cannot hold NUL (U+0000): a value's NUL becomes U+FFFD, a key's is
# dropped, wherever it hides (nested arrays and key-value lists, event names, JSON carried in a
# string attribute), so that one NUL costs a character, not the batch.
def _clean(text: str) -> str:
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _key(text: str) -> str:
    return text.replace("\x00", "") if "\x00" in text else text


# The escape `\u0000` in JSON text (not `\\u0000`, an escaped backslash and "u0000").
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def json_cleaned(text: str) -> str:
    """JSON text whose strings and keys, once read, hold U+FFFD where the text escapes NUL."""
    return _JSON_NUL.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def _attributes(attributes) -> dict[str, Any]:
    return {_key(item.key): _value(item.value) for item in attributes}


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
    try:
        nanos_datetime(span.start_time_unix_nano)
        if span.end_time_unix_nano:
            nanos_datetime(span.end_time_unix_nano)
    except (OverflowError, ValueError, OSError):
        decoded.reject(f"{where}: span {span_id.hex()} has a time out of range.")
        return
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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def nanos_datetime(value: int) -> datetime:
    """The instant `value` nanoseconds after the epoch, to the microsecond (cut, not rounded)."""
    return _EPOCH + timedelta(microseconds=value // 1000)


def _datetime(nanos: str | None) -> datetime | None:
    if nanos is None:
        return None
    return nanos_datetime(int(nanos))


def started_at(span: SpanData) -> datetime:
    """A span's start, as its step's `started_at`."""
    start = _datetime(span["start"])
    assert start is not None  # a span without a start is rejected when decoded
    return start
