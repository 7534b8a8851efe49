"""The one error vocabulary of the service.

Services raise these; the API's exception handler turns them into the contract's
`{"name", "message"}` envelope and the console turns them into form errors or messages.
The ten names are exactly those of contract section 7.
"""

ERROR_NAMES = (
    "bad_request",
    "unauthorized",
    "insufficient_scope",
    "not_found",
    "conflict",
    "payload_too_large",
    "unsupported_media_type",
    "rate_limited",
    "internal_server_error",
    "service_unavailable",
)


class ServiceError(Exception):
    name = "internal_server_error"
    status = 500
    default_message = "The service hit an unexpected error."

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)


class BadRequest(ServiceError):
    name, status, default_message = "bad_request", 400, "The request is not valid."


class Unauthorized(ServiceError):
    name, status = "unauthorized", 401
    default_message = "A valid API key is required: send it as 'Authorization: Bearer <key>'."


class InsufficientScope(ServiceError):
    name, status = "insufficient_scope", 403

    def __init__(self, scope: str, message: str | None = None) -> None:
        self.scope = scope
        super().__init__(message or f"This API key lacks the '{scope}' permission.")


class NotFound(ServiceError):
    name, status, default_message = "not_found", 404, "The resource does not exist."


class Conflict(ServiceError):
    name, status = "conflict", 409
    default_message = "The operation conflicts with the resource's current state."


class PayloadTooLarge(ServiceError):
    name, status, default_message = "payload_too_large", 413, "The request body is too large."


class UnsupportedMediaType(ServiceError):
    name, status, default_message = "unsupported_media_type", 415, "Unsupported media type."


class RateLimited(ServiceError):
    name, status, default_message = "rate_limited", 429, "Too many requests."

    def __init__(self, retry_after: int, message: str | None = None) -> None:
        self.retry_after = max(1, int(retry_after))
        super().__init__(message or f"Too many requests; retry in {self.retry_after} s.")


class ServiceUnavailable(ServiceError):
    name, status = "service_unavailable", 503
    default_message = "The service is temporarily unavailable; the request was not processed."

    def __init__(self, message: str | None = None, *, retry_after: int = 5) -> None:
        self.retry_after = retry_after
        super().__init__(message)
