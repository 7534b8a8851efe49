"""Request ids, request logs and the last line of defence for API errors."""

import logging
import re
import time
import uuid

from django.core.exceptions import DisallowedHost
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
_edge_logger = logging.getLogger("apps.api")


def reads_chunked_bodies(view) -> bool:
    """Whether a view decodes `Transfer-Encoding: chunked` itself: it says so with a
    `reads_chunked_bodies = True` attribute (on a view class, or on a function view)."""
    return bool(getattr(getattr(view, "cls", view), "reads_chunked_bodies", False))


class HttpEdgesMiddleware:
    """What happens before a view can: a Host this service does not answer to, a chunked body,
    and the unread rest of a body refused as too large.

    - Bad Host: Django answers an HTML 400 and logs an ERROR with a traceback per request (a
      flood, from any scanner). Here it is the API's envelope on /v1 (plain text elsewhere)
      and one warning line.
    - `Transfer-Encoding: chunked`: WSGI gives Django no length, so it would read the body as
      empty and the view would answer as if nothing was sent. Refused clearly instead (400 on
      /v1, whose errors are the contract's ten names; 411 elsewhere), except for a view that
      says it `reads_chunked_bodies` and decodes the framing itself (the OTLP traces endpoint:
      OpenTelemetry's Node exporter always sends chunked bodies). Checked once the URL is
      resolved, before any view or later middleware can read the body as empty.
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
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not reads_chunked_bodies(view):
            return _sized(self._refuse_chunked(request))
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

    def _refuse_chunked(self, request: HttpRequest) -> HttpResponse:
        message = (
            "The body was sent with Transfer-Encoding: chunked, which this service cannot read; "
            "send it with a Content-Length."
        )
        if is_api_path(request.path):
            return error_response(errors.BadRequest(message))
        return HttpResponse(message, status=411, content_type="text/plain")


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
