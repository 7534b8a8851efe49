"""CORS for the browser-token operations (/v1/me/...), and only for them. It lives beside the
browser tokens: whether an answer may be read from an origin is the token's Agent's setting.

- A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) carries no
  credential, so it cannot know the token's Agent: it is answered 204 for GET with the
  `Authorization` header, for any origin. That lets the browser send the request, not read
  the answer.
- The answer itself carries `Access-Control-Allow-Origin` only when the request's `Origin` is
  one of the token's Agent's allowed origins; from any other origin the browser withholds it.
- A 401 (no Agent known: missing, forged or expired token) is readable from any origin: it
  holds no data, and the page must be able to tell that it needs a new token.
Every other /v1 path sends no CORS headers, and `OPTIONS` there stays `400` with `Allow`.
"""

from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from apps.workspaces.selectors import agent_allowed_origins

PREFLIGHT_MAX_AGE_SECONDS = 600
EXPOSED_HEADERS = "X-Request-Id, Retry-After, WWW-Authenticate, RateLimit, RateLimit-Policy"


def _is_preflight(request: HttpRequest) -> bool:
    return (
        request.method == "OPTIONS"
        and "Origin" in request.headers
        and "Access-Control-Request-Method" in request.headers
    )


def _allowed(request: HttpRequest, response: HttpResponse, origin: str) -> bool:
    if response.status_code == 401:
        return True
    credential = getattr(request, "api_credential", None)
    if credential is None or credential.kind != "browser_token":
        return False
    return origin.rstrip("/").lower() in agent_allowed_origins(agent=credential.agent)


def browser_cors(
    view: Callable[..., HttpResponse], *, methods: tuple[str, ...] = ("GET",)
) -> Callable[..., HttpResponse]:
    """Wrap a /v1/me view with the CORS rules above; `methods` are those the preflight
    allows (a write also sends `Content-Type: application/json`, which needs a preflight).
    A write refuses a foreign origin itself: CORS only withholds the answer."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        origin = request.headers.get("Origin", "")
        if _is_preflight(request):
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Origin"] = origin
            response["Access-Control-Allow-Methods"] = ", ".join(methods)
            response["Access-Control-Allow-Headers"] = (
                "Authorization" if methods == ("GET",) else "Authorization, Content-Type"
            )
            response["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_SECONDS)
            patch_vary_headers(response, ["Origin"])
            return response
        response = view(request, *args, **kwargs)
        patch_vary_headers(response, ["Origin"])
        if origin and _allowed(request, response, origin):
            response["Access-Control-Allow-Origin"] = origin
            response["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
        return response

    return wrapped
