"""Request ids, request logs and the last line of defence for API errors."""

import logging
import re
import tempfile
import time
import uuid

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import LimitedStream
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from apps.api.errors import as_service_error, error_response
from apps.common import errors

logger = logging.getLogger("apps.request")
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


def is_api_path(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


class RequestIdMiddleware:
    """Give every response an `X-Request-Id` and log one structured line per request.

    The log line carries the API key's public prefix at most (set by authentication as
    `request.api_key_prefix`), never the Authorization header or any secret.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-Id", "")
        request_id = incoming if _CLIENT_REQUEST_ID.match(incoming) else f"req_{uuid.uuid4().hex}"
        request.request_id = request_id  # type: ignore[attr-defined]  # for views and logs
        started = time.perf_counter()
        response = self.get_response(request)
        response["X-Request-Id"] = request_id
        logger.info(
            "request",
            extra={
                "request_id": request_id,
                "method": request.method,
                # A view whose path holds a secret (an invitation link) sets `log_path`.
                "path": getattr(request, "log_path", request.path),
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "api_key": getattr(request, "api_key_prefix", None),
            },
        )
        return response


class ApiErrorMiddleware:
    """Exceptions that escape a /v1 view outside DRF's handler still become the envelope."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        error = as_service_error(exc)
        if error is None:
            logger.exception("unexpected error on %s", request.path, exc_info=exc)
            error = errors.ServiceError()
        return error_response(error)


# A refused (413) body declared larger than this is not read at all (an upload of 50 MB is
# refused before it is read, docs/knowledge.md): the connection is then lost, which a client
# sending that much must expect. Smaller ones (a 9 MB JSON body) are read and dropped.
_DRAIN_LIMIT_BYTES = 16 * 1024 * 1024
# A chunked body is read whole before the view runs, up to as much as a refused sized body is
# drained (or the ingest limit, if configured larger): no endpoint takes more. Past the first
# MiB it waits in a temporary file rather than in memory.
_CHUNKED_IN_MEMORY_BYTES = 1024 * 1024
_edge_logger = logging.getLogger("apps.api")
# A chunk's size: hex digits only (int() would also take "0x", "_" and a sign).
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")


class HttpEdgesMiddleware:
    """What happens before a view can: a Host this service does not answer to, a chunked body,
    and the unread rest of a body refused as too large.

    - Bad Host: Django answers an HTML 400 and logs an ERROR with a traceback per request (a
      flood, from any scanner). Here it is the API's envelope on /v1 (plain text elsewhere)
      and one warning line.
    - `Transfer-Encoding: chunked`: WSGI gives Django no length, so it would read the body as
      empty and the view would answer as if nothing was sent. The body is decoded here instead
      (`_chunked_body_read`) and handed on as a sized one, so every view, parser and limit
      sees it exactly as if it had come with a Content-Length (OpenTelemetry's Node exporter
      always sends chunked bodies; so may any HTTP client streaming a body). Done once the URL
      is resolved, before any view or later middleware can read the body.
    - NUL in a console address: no stored value holds one (PostgreSQL text cannot), so a path
      id with one names nothing (404) and a query parameter with one is refused (400, the
      console's error page) before a view sends it to the database as a filter. /v1 views
      check their own parameters and answer in the contract's envelope.
    - 413: the server answered before reading the body; reading the rest keeps the connection
      usable for the client's next request (gunicorn otherwise drops it after answering
      `Connection: keep-alive`), up to 16 MiB declared; a larger body is never read.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.get_host()
        except DisallowedHost:
            return _sized(self._refuse_host(request))
        response = self.get_response(request)
        if response.status_code == 413:
            _drain(request)
        return response

    def process_view(self, request: HttpRequest, view, _args, kwargs) -> HttpResponse | None:
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            try:
                _chunked_body_read(request)
            except errors.ServiceError as error:
                return _sized(_edge_error(request, error))
        if not is_api_path(request.path):
            return _refuse_nul_in_console_address(request, kwargs)
        return None

    def _refuse_host(self, request: HttpRequest) -> HttpResponse:
        host = request.META.get("HTTP_HOST", "")[:100]
        _edge_logger.warning("refused Host %r on %s %s", host, request.method, request.path)
        if is_api_path(request.path):
            response = error_response(
                errors.BadRequest("The Host header names no site this service answers for.")
            )
        else:
            response = HttpResponse("Bad Request (400)", status=400, content_type="text/plain")
        response._has_been_logged = True  # type: ignore[attr-defined]  # the line above
        return response


def _edge_error(request: HttpRequest, error: errors.ServiceError) -> HttpResponse:
    """The API's envelope on /v1, the message as plain text elsewhere."""
    if is_api_path(request.path):
        return error_response(error)
    return HttpResponse(error.message, status=error.status, content_type="text/plain")


def chunked_body_limit() -> int:
    """The most a chunked body may hold: what any endpoint takes (each still applies its own
    limit to it, as to a sized body)."""
    return max(_DRAIN_LIMIT_BYTES, settings.API_MAX_INGEST_BODY_BYTES)


def _chunked_body_read(request: HttpRequest) -> None:
    """Read a `Transfer-Encoding: chunked` body whole (at most `chunked_body_limit()` bytes)
    and put it in place of the request's stream with its length, or raise BadRequest (a
    malformed body, or a Content-Length beside the chunking: two lengths that may disagree,
    the stuff of request smuggling) or PayloadTooLarge.

    gunicorn decodes the chunks itself and says so (`wsgi.input_terminated`); Django's
    development server (`make run`, the tests' live server) hands on a stream limited to a
    Content-Length of 0, so the framing is decoded here from the socket's reader beneath it."""
    environ = request.META
    if environ.get("CONTENT_LENGTH"):
        raise errors.BadRequest(
            "The request has both a Content-Length and Transfer-Encoding: chunked; send one."
        )
    limit = chunked_body_limit()
    # Lives as long as the request (a disk file is unlinked from the start: nothing is left).
    body = tempfile.SpooledTemporaryFile(max_size=_CHUNKED_IN_MEMORY_BYTES)  # noqa: SIM115
    try:
        if environ.get("wsgi.input_terminated"):
            size = _copy(environ["wsgi.input"], body, limit=limit)
        else:
            stream = environ["wsgi.input"]
            if isinstance(stream, LimitedStream):
                stream = getattr(getattr(stream, "_read", None), "__self__", stream)
            size = _dechunk(stream, body, limit=limit)
    except BaseException:
        body.close()
        raise
    body.seek(0)
    # What WSGIRequest itself builds over wsgi.input, over the decoded body instead.
    request._stream = LimitedStream(body, size)  # type: ignore[arg-type,assignment]
    request._read_started = False  # type: ignore[attr-defined]
    environ["CONTENT_LENGTH"] = str(size)
    del environ["HTTP_TRANSFER_ENCODING"]


def _too_large(limit: int) -> errors.PayloadTooLarge:
    return errors.PayloadTooLarge(f"The body is larger than {limit} bytes.")


def _copy(source, target, *, limit: int) -> int:
    size = 0
    while chunk := source.read(min(64 * 1024, limit + 1 - size)):
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        target.write(chunk)
    return size


def _dechunk(stream, target, *, limit: int) -> int:
    size = 0
    while True:
        size_field = stream.readline(1026).split(b";", 1)[0].strip()
        if not _CHUNK_SIZE.fullmatch(size_field):
            raise errors.BadRequest("Malformed chunked body.")
        chunk = int(size_field, 16)
        if chunk == 0:
            while stream.readline(1026) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return size
        size += chunk
        if size > limit:
            raise _too_large(limit)
        while chunk:
            data = stream.read(min(chunk, 64 * 1024))
            if not data:
                raise errors.BadRequest("The chunked body ended early.")
            target.write(data)
            chunk -= len(data)
        stream.readline(4)


def _refuse_nul_in_console_address(request: HttpRequest, kwargs: dict) -> HttpResponse | None:
    if any("\x00" in value for value in kwargs.values() if isinstance(value, str)):
        raise Http404()
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "")[:40]
            message = (
                f"The address's “{shown}” parameter holds a NUL character, which no value can."
            )
            return render(request, "400.html", {"message": message}, status=400)
    return None


def _sized(response: HttpResponse) -> HttpResponse:
    # Answered before CommonMiddleware, which would set it.
    response["Content-Length"] = str(len(response.content))
    return response


def _drain(request: HttpRequest) -> None:
    stream = getattr(request, "_stream", None)
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    if stream is None or declared > _DRAIN_LIMIT_BYTES:
        return
    read = 0
    try:
        while read < _DRAIN_LIMIT_BYTES:
            chunk = stream.read(1024 * 1024)
            if not chunk:
                return
            read += len(chunk)
    except OSError:
        return
