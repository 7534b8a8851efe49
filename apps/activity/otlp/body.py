"""The OTLP/HTTP request and answer bodies: which encoding the request's Content-Type names, its
gzip undone within a limit, the `ExportTraceServiceResponse` in the same encoding, and a failed
request's answer as the `google.rpc.Status` the specification wants."""

import zlib
from typing import Any

import orjson
from google.protobuf import json_format
from google.rpc.code_pb2 import Code
from google.rpc.status_pb2 import Status as RpcStatus
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from apps.common.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


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
