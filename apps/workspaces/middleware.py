"""Console pages while the database is unreachable: a styled 503 page, not a 500.

The API answers 503 with `Retry-After` itself (apps.api.errors); this does the same for every
other page. Each such request logs one warning line, no traceback, and nothing needs a restart:
the next request after the database is back is served normally.
"""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from apps.api.errors import DATABASE_RETRY_AFTER
from apps.api.middleware import is_api_path

logger = logging.getLogger("apps.console")


class DatabaseUnavailablePageMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if is_api_path(request.path) or not isinstance(exc, OperationalError | InterfaceError):
            return None
        logger.warning(
            "database unavailable: %s %s answered 503 (%s)",
            request.method,
            request.path,
            exc.__class__.__name__,
        )
        # Rendered without the request: context processors would query the database again.
        response = HttpResponse(
            render_to_string("503.html", {"retry_after": DATABASE_RETRY_AFTER}), status=503
        )
        response["Retry-After"] = str(DATABASE_RETRY_AFTER)
        response._has_been_logged = True  # type: ignore[attr-defined]  # the line above is it
        return response
