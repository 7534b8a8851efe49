"""Request ids, request logs and the last line of defence for API errors."""

import logging
import re
import time
import uuid

from django.http import HttpRequest, HttpResponse

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
                "path": request.path,
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
