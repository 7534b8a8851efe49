"""Every API error, from any layer, becomes the contract's `{"name", "message"}` envelope.

DRF exceptions, our domain exceptions (`apps.common.errors`), Django's own 404/500 paths and
database outages all end here, so no HTML and no stack trace reaches an API client.
"""

import logging

import orjson
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError, DataError, InterfaceError, OperationalError
from django.http import Http404, HttpResponse
from rest_framework import exceptions as drf

from apps.common import errors

logger = logging.getLogger("apps.api")

REALM = "agent-console"
DATABASE_RETRY_AFTER = 5


def error_response(error: errors.ServiceError) -> HttpResponse:
    response = HttpResponse(
        orjson.dumps({"name": error.name, "message": error.message}),
        status=error.status,
        content_type="application/json",
    )
    if isinstance(error, errors.Unauthorized):
        response["WWW-Authenticate"] = f'Bearer realm="{REALM}"'
    elif isinstance(error, errors.InsufficientScope):
        response["WWW-Authenticate"] = (
            f'Bearer realm="{REALM}", error="insufficient_scope", scope="{error.scope}", '
            f'error_description="{error.message}"'
        )
    elif isinstance(error, errors.RateLimited | errors.ServiceUnavailable):
        response["Retry-After"] = str(error.retry_after)
    if isinstance(error, errors.ServiceUnavailable):
        # Whoever raised it logged one warning; Django would add an ERROR line per request.
        response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def _validation_message(detail) -> str:
    """Turn DRF's nested error detail into one sentence that names the field."""
    if isinstance(detail, dict):
        for field, value in detail.items():
            inner = _validation_message(value)
            if field in ("non_field_errors", "__all__"):
                return inner
            return f"{field}: {inner}"
    if isinstance(detail, list) and detail:
        return _validation_message(detail[0])
    return str(detail)


def as_service_error(exc: Exception) -> errors.ServiceError | None:
    """Map any exception raised while serving an API request to our vocabulary."""
    if isinstance(exc, errors.ServiceError):
        return exc
    if isinstance(exc, drf.ValidationError):
        return errors.BadRequest(_validation_message(exc.detail))
    if isinstance(exc, drf.ParseError):
        return errors.BadRequest(str(exc.detail))
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return errors.Unauthorized(str(exc.detail))
    if isinstance(exc, drf.PermissionDenied | PermissionDenied):
        return errors.InsufficientScope("unknown", "This API key may not perform this operation.")
    if isinstance(exc, drf.NotFound | Http404):
        return errors.NotFound()
    if isinstance(exc, drf.MethodNotAllowed):
        return errors.BadRequest(str(exc.detail))
    if isinstance(exc, drf.UnsupportedMediaType):
        return errors.UnsupportedMediaType(str(exc.detail))
    if isinstance(exc, drf.NotAcceptable):
        return errors.BadRequest(str(exc.detail))
    if isinstance(exc, drf.Throttled):
        return errors.RateLimited(int(getattr(exc, "wait", None) or 1))
    if isinstance(exc, RequestDataTooBig):
        return errors.PayloadTooLarge()
    if isinstance(exc, SuspiciousOperation):
        return errors.BadRequest("The request was refused as malformed.")
    if isinstance(exc, OperationalError | InterfaceError):
        cause = type(exc.__cause__).__name__
        if cause in ("QueryCanceled", "IdleInTransactionSessionTimeout"):
            # apps.common.statement_timeout: the request's transaction ran out of time.
            logger.warning("database time limit of the request reached: %s", cause)
        else:
            logger.warning("database unavailable: %s", exc.__class__.__name__)
        return errors.ServiceUnavailable(retry_after=DATABASE_RETRY_AFTER)
    if isinstance(exc, DataError):
        # A value the database cannot hold (a NUL character, an out-of-range number).
        return errors.BadRequest("The request contains a value that cannot be stored.")
    if isinstance(exc, DatabaseError):
        logger.exception("database error while serving an API request")
        return errors.ServiceError()
    if isinstance(exc, drf.APIException):
        return errors.BadRequest(str(exc.detail))
    return None


def exception_handler(exc: Exception, context) -> HttpResponse:
    """DRF's EXCEPTION_HANDLER: everything a view raises, including unknown exceptions."""
    error = as_service_error(exc)
    if error is None:
        logger.exception("unexpected error while serving an API request", exc_info=exc)
        error = errors.ServiceError()
    response = error_response(error)
    if isinstance(exc, drf.MethodNotAllowed):
        view = context.get("view")
        if view is not None:
            response["Allow"] = ", ".join(view.allowed_methods)
    return response
