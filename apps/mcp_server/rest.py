"""Calls from the MCP server's tools into /v1, in process, with the resource token.

Each tool is a REST operation: it goes through the same view, so authentication, the scope it
needs, owner rules, validation, errors and paging are exactly the API's. The call skips the
HTTP round trip and Django's middleware (whose per-request work, such as closing database
connections at the end of a request, must not run inside the /mcp request), not the view.
"""

from dataclasses import dataclass
from io import BytesIO
from typing import Any
from urllib.parse import urlencode

import orjson
from django.core.handlers.wsgi import WSGIRequest
from django.urls import Resolver404, resolve

# What the inner request copies from the /mcp request: the host (the resource token's audience
# is checked against it) and the connection's facts.
_COPIED_META = ("SERVER_NAME", "SERVER_PORT", "HTTP_HOST", "REMOTE_ADDR", "wsgi.url_scheme")


@dataclass(frozen=True)
class RestResult:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error_message(self) -> str:
        if isinstance(self.body, dict) and "message" in self.body:
            return f"{self.body.get('name', 'error')}: {self.body['message']}"
        return f"HTTP {self.status}"


def v1_call(
    *,
    outer_meta: dict,
    token: str,
    method: str,
    path: str,
    query: dict[str, Any] | None = None,
    body: dict | None = None,
) -> RestResult:
    """`method /v1/<path>` with `Authorization: Bearer <token>`: the status, and the JSON
    answer parsed (or a text answer as a string)."""
    payload = orjson.dumps(body) if body is not None else b""
    params = {name: value for name, value in (query or {}).items() if value not in (None, "")}
    environ = {name: outer_meta[name] for name in _COPIED_META if name in outer_meta}
    environ.update(
        {
            "REQUEST_METHOD": method,
            "PATH_INFO": f"/v1/{path}",
            "SCRIPT_NAME": "",
            "QUERY_STRING": urlencode(params),
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "HTTP_ACCEPT": "application/json",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(payload)),
            "wsgi.input": BytesIO(payload),
        }
    )
    request = WSGIRequest(environ)
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return RestResult(404, {"name": "not_found", "message": f"No operation at /v1/{path}."})
    response = match.func(request, *match.args, **match.kwargs)
    if hasattr(response, "render"):
        response.render()
    content = response.content
    if not content:
        return RestResult(response.status_code, None)
    if response.get("Content-Type", "").startswith("application/json"):
        return RestResult(response.status_code, orjson.loads(content))
    # Markdown and other text (a document's content): given as it is.
    return RestResult(response.status_code, content.decode("utf-8", errors="replace"))
