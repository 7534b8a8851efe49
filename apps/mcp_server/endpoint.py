"""`/mcp`: the Agents MCP server over Streamable HTTP, served by Django.

Authentication is OAuth (django-oauth-toolkit verifies the bearer access token, including its
RFC 8707 audience); a request without a valid one gets 401 with the RFC 9728 challenge that
points MCP clients at the protected-resource metadata. A valid token is exchanged for a
resource-bound API token, and the request is handed to the SDK's Streamable HTTP transport in
stateless JSON mode: each POST is one exchange, so a WSGI worker is never held by a stream.

The SDK's transport is ASGI. Each request gets its own session manager inside
`async_to_sync`, whose event loop lives for that request; the tools' ORM work comes back to
this thread through `sync_to_async(thread_sensitive=True)`.
"""

import logging
from collections.abc import MutableMapping
from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.www_authenticate import build_bearer_challenge

from apps.common.errors import Unauthorized
from apps.mcp_server.oauth import TOOL_SCOPES
from apps.mcp_server.resource_tokens import service_audience
from apps.mcp_server.server import McpCall, current_call, mcp
from apps.mcp_server.services import resource_token_exchange

logger = logging.getLogger(__name__)

# The SDK's low-level server behind `mcp`; building the Starlette app once exposes it through
# the public session manager, whose `app` each request's own manager reuses.
mcp.streamable_http_app(stateless_http=True, json_response=True)
_LOWLEVEL_SERVER = mcp.session_manager.app
# Host is Django's to check (ALLOWED_HOSTS) and Origin ours (`_origin_allowed`), before the
# transport sees the request.
_TRANSPORT_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)
_MAX_BODY_BYTES = 1024 * 1024
# No exchange holds a worker longer than this, whatever a client asks for.
_MAX_SECONDS = 30


def protected_resource_metadata_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("mcp_server:protected_resource_metadata"))


def _challenge(request: HttpRequest, error: dict | None = None) -> HttpResponse:
    response = HttpResponse(status=401)
    # `scope`: what the tools need (MCP authorization, scope selection), so a client asks for
    # those rather than for every permission the metadata could list.
    response["WWW-Authenticate"] = build_bearer_challenge(
        request,
        {**(error or {}), "scope": " ".join(TOOL_SCOPES)},
        resource_metadata_url=protected_resource_metadata_url(request),
    )
    return response


def _origin_allowed(request: HttpRequest) -> bool:
    """The MCP transport's DNS-rebinding defence: an Origin, when sent, must be this service's
    own or one of MCP_ALLOWED_ORIGINS. Desktop clients send none."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    own = f"{request.scheme}://{request.get_host()}"
    return origin.lower().rstrip("/") in {
        own.lower(),
        *map(str.lower, settings.MCP_ALLOWED_ORIGINS),
    }


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if not _origin_allowed(request):
        return JsonResponse(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32000, "message": "Forbidden: this Origin may not call /mcp."},
            },
            status=403,
        )
    # A personal session never authenticates an Agent (contract 5.1.3): only the bearer does.
    valid, oauth_request = get_oauthlib_core().verify_request(request, scopes=[])
    if not valid or oauth_request is None:
        error = getattr(oauth_request, "oauth2_error", None) or (
            {"error": "invalid_token"} if request.headers.get("Authorization") else None
        )
        return _challenge(request, error)
    try:
        raw_token, connection = resource_token_exchange(
            access_token=oauth_request.access_token, audience=service_audience(request)
        )
    except Unauthorized as exc:
        return _challenge(request, {"error": "invalid_token", "error_description": exc.message})
    if request.method != "POST":
        # Stateless JSON mode sends nothing unasked, so there is no stream to open with GET
        # (the spec's answer is 405) and no session to end with DELETE.
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
    call = McpCall(resource_token=raw_token, agent_id=connection.agent_id, outer_meta=request.META)
    return _serve(request, call)


def _serve(request: HttpRequest, call: McpCall) -> HttpResponse:
    # Read no further than the limit (not the whole body, up to Django's 8 MiB, to cut it): a
    # longer one is refused, rather than handed on cut short to fail as malformed JSON.
    body = request.read(_MAX_BODY_BYTES + 1)
    if len(body) > _MAX_BODY_BYTES:
        return JsonResponse(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32600,
                    "message": f"The request body is larger than {_MAX_BODY_BYTES} bytes.",
                },
            },
            status=413,
        )
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.get_host(), 0),
    }
    status, headers, chunks = async_to_sync(_run_transport)(scope, body, call)
    response = HttpResponse(b"".join(chunks), status=status)
    for name, value in headers:
        if name.lower() not in (b"content-length", b"transfer-encoding"):
            response[name.decode("latin-1")] = value.decode("latin-1")
    return response


async def _run_transport(
    scope: dict, body: bytes, call: McpCall
) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
    sent_body = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> dict:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        # The client stays connected until the answer is written; the transport's wait for
        # a disconnect is cancelled when it finishes.
        await anyio.sleep_forever()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    manager = StreamableHTTPSessionManager(
        app=_LOWLEVEL_SERVER,
        json_response=True,
        stateless=True,
        security_settings=_TRANSPORT_SECURITY,
        max_request_body_size=_MAX_BODY_BYTES,
    )
    token = current_call.set(call)
    try:
        with anyio.move_on_after(_MAX_SECONDS) as deadline:
            async with manager.run():
                await manager.handle_request(scope, receive, send)
    finally:
        current_call.reset(token)
    if deadline.cancelled_caught and not chunks:
        logger.warning("an /mcp exchange took over %s s and was cut off", _MAX_SECONDS)
        return (
            504,
            [(b"content-type", b"application/json")],
            [b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Request timed out"}}'],
        )
    return status, headers, chunks
