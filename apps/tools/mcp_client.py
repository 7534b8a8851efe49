"""Listing the tools of a third-party MCP server, through our network guard.

The protocol is the official `mcp` SDK's: its `Client` negotiates the version, its
`streamable_http_client` / `sse_client` transports speak HTTP, and `list_tools` pages through
the listing. What this module adds is the network policy, by handing those transports an
httpx2 client whose transport is `GuardedTransport`:

- every request (the SDK's POSTs, its GET streams, each redirect hop it follows) is checked by
  `apps.common.netguard.check_url` and then sent to the address that check resolved, never to
  the host name again, so a DNS answer that changes between check and connection (rebinding)
  cannot reach a private address; TLS still verifies the certificate against the host name;
- a redirect whose target the guard refuses fails the discovery at once, before anything
  connects there (the SDK itself only follows redirects within the endpoint's origin);
- all bytes read from the server share one budget, compressed bodies are refused (we ask for
  `identity`, so a decompression bomb cannot expand under the budget), and connect, read and
  total timeouts bound the whole exchange.

Everything here is async and touches no database; `list_remote_tools` is the one sync entry.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from apps.common.netguard import BlockedURL, check_url

USER_AGENT = "AgentConsoleBot/1.0 (+tool discovery)"
TRANSPORT_STREAMABLE_HTTP = "streamable_http"
TRANSPORT_SSE = "sse"
MAX_TOOL_NAME_LENGTH = 128
MAX_DESCRIPTION_LENGTH = 4000
MAX_SCHEMA_BYTES = 64 * 1024
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class DiscoveryError(Exception):
    """Discovery did not succeed; str() is a short message for the owner (no secrets)."""

    # Set when the server did not speak Streamable HTTP at all, so the SSE transport is worth
    # a try; a timeout, a refused address or a bad listing is final.
    try_sse: bool = False


@dataclass(frozen=True)
class Limits:
    connect_timeout: float = 5
    read_timeout: float = 15
    total_timeout: float = 45
    max_bytes: int = 4 * 1024 * 1024
    max_tools: int = 500
    max_pages: int = 50


@dataclass(frozen=True)
class RemoteTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Listing:
    transport: str
    tools: list[RemoteTool]


class _Budget:
    """Bytes the server may still send us during one discovery."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, size: int) -> None:
        self.used += size
        if self.used > self.max_bytes:
            raise self._exceeded()

    def check_declared(self, size: int) -> None:
        """Refuse a body whose Content-Length alone is past what is left."""
        if self.used + size > self.max_bytes:
            raise self._exceeded()

    def _exceeded(self) -> DiscoveryError:
        return DiscoveryError(
            f"The server sent more than {self.max_bytes // 1024} KB; discovery stopped."
        )


class _BudgetedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._inner:
            self._budget.take(len(piece))
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


class GuardedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends each request only to an address the guard accepted."""

    def __init__(self, *, budget: _Budget, allow_loopback: bool | None = None) -> None:
        self._budget = budget
        self._allow_loopback = allow_loopback
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False, retries=0)

    async def _check(self, url: str):
        # getaddrinfo blocks: resolve in a worker thread so the event loop keeps its timeouts.
        return await anyio.to_thread.run_sync(
            functools.partial(check_url, url, allow_loopback=self._allow_loopback)
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        if request.url.userinfo:
            raise BlockedURL("URLs with a user name or password are not accepted.")
        checked_url, addresses = await self._check(url)
        host = request.url.host
        last_error: Exception | None = None
        for address in addresses:
            # Same request, but to the checked address: the Host header stays the name (httpx2
            # set it when the request was built) and TLS verifies the certificate for the name.
            pinned = httpx2.Request(
                request.method,
                request.url.copy_with(host=str(address)),
                headers=request.headers,
                stream=request.stream,
                extensions={**request.extensions, "sni_hostname": host},
            )
            try:
                response = await self._inner.handle_async_request(pinned)
            except httpx2.ConnectError as exc:  # nothing sent yet: try the next address
                last_error = exc
                continue
            return await self._screen(response, checked_url)
        assert last_error is not None
        raise last_error

    async def _screen(self, response: httpx2.Response, request_url: str) -> httpx2.Response:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise DiscoveryError("The server sent a compressed response, which is not accepted.")
        location = response.headers.get("location")
        if response.status_code in _REDIRECT_STATUSES and location:
            target = str(httpx2.URL(request_url).join(location))
            try:
                await self._check(target)
            except BlockedURL as exc:
                await response.aclose()
                raise BlockedURL(f"The server redirected to a refused address: {exc}") from None
        declared = response.headers.get("content-length", "")
        if declared.isdigit():
            try:
                self._budget.check_declared(int(declared))
            except DiscoveryError:
                await response.aclose()
                raise
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _BudgetedStream(response.stream, self._budget)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _http_client(
    *,
    headers: Mapping[str, str],
    limits: Limits,
    budget: _Budget,
    allow_loopback: bool | None,
) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=GuardedTransport(budget=budget, allow_loopback=allow_loopback),
        # The owner's auth headers, then ours: a stored header cannot turn compression back on.
        headers={**headers, "User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
        timeout=httpx2.Timeout(
            limits.connect_timeout,
            connect=limits.connect_timeout,
            read=limits.read_timeout,
        ),
        trust_env=False,
        follow_redirects=False,
    )


def _transport(
    kind: str,
    url: str,
    *,
    headers: Mapping[str, str],
    limits: Limits,
    budget: _Budget,
    allow_loopback: bool | None,
) -> AbstractAsyncContextManager[Any]:
    if kind == TRANSPORT_STREAMABLE_HTTP:
        client = _http_client(
            headers=headers, limits=limits, budget=budget, allow_loopback=allow_loopback
        )
        return _owning(client, streamable_http_client(url, http_client=client))

    def factory(headers=None, timeout=None, auth=None) -> httpx2.AsyncClient:
        return _http_client(
            headers=headers or {}, limits=limits, budget=budget, allow_loopback=allow_loopback
        )

    return sse_client(
        url,
        headers=dict(headers),
        timeout=limits.connect_timeout,
        sse_read_timeout=limits.read_timeout,
        httpx_client_factory=factory,
    )


class _owning(AbstractAsyncContextManager[Any]):
    """Enter a transport and close the httpx2 client we gave it when it exits."""

    def __init__(self, client: httpx2.AsyncClient, inner: AbstractAsyncContextManager[Any]):
        self._client = client
        self._inner = inner

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        try:
            return await self._inner.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        try:
            return await self._inner.__aexit__(*exc_info)
        finally:
            await self._client.__aexit__(None, None, None)


def _checked_tool(tool: Any) -> RemoteTool:
    name = tool.name
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_TOOL_NAME_LENGTH:
        raise DiscoveryError(
            f"The server listed a tool whose name is empty or longer than "
            f"{MAX_TOOL_NAME_LENGTH} characters."
        )
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise DiscoveryError(
            f"The input schema of tool {name!r} is larger than {MAX_SCHEMA_BYTES // 1024} KB."
        )
    description = (tool.description or "")[:MAX_DESCRIPTION_LENGTH]
    return RemoteTool(name=name, description=description, input_schema=schema)


async def _list_with(transport_cm: AbstractAsyncContextManager[Any], limits: Limits) -> list:
    tools: dict[str, RemoteTool] = {}
    async with Client(transport_cm, read_timeout_seconds=limits.read_timeout, cache=None) as client:
        cursor: str | None = None
        for _page in range(limits.max_pages):
            result = await client.list_tools(cursor=cursor)
            for tool in result.tools:
                checked = _checked_tool(tool)
                if checked.name in tools:
                    raise DiscoveryError(f"The server listed the tool {checked.name!r} twice.")
                tools[checked.name] = checked
                if len(tools) > limits.max_tools:
                    raise DiscoveryError(
                        f"The server lists more than {limits.max_tools} tools; discovery stopped."
                    )
            cursor = result.next_cursor
            if not cursor:
                return list(tools.values())
    raise DiscoveryError(f"The tool list did not end after {limits.max_pages} pages.")


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(_leaf_errors(inner))
        return leaves
    return [exc]


def _as_discovery_error(exc: BaseException, *, limits: Limits) -> DiscoveryError:
    """The clearest message among the errors an exchange ended with."""
    leaves = _leaf_errors(exc)
    for kind in (BlockedURL, DiscoveryError, TimeoutError, httpx2.TimeoutException):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return _message_for(leaf, limits=limits)
    return _message_for(leaves[0], limits=limits)


def _message_for(exc: BaseException, *, limits: Limits) -> DiscoveryError:
    if isinstance(exc, DiscoveryError):
        return exc
    if isinstance(exc, BlockedURL):
        return DiscoveryError(f"Blocked by the network guard: {exc}")
    if isinstance(exc, httpx2.ConnectTimeout):
        return DiscoveryError(f"Could not connect within {limits.connect_timeout:g} s.")
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return DiscoveryError(
            f"The server did not answer in time (read timeout {limits.read_timeout:g} s, "
            f"total {limits.total_timeout:g} s)."
        )
    if isinstance(exc, httpx2.ConnectError):
        return DiscoveryError("Could not connect to the server.")
    if isinstance(exc, httpx2.HTTPStatusError):
        error = DiscoveryError(f"The server answered HTTP {exc.response.status_code}.")
        error.try_sse = True
        return error
    if isinstance(exc, MCPError):
        error = DiscoveryError(f"The server refused the MCP request: {exc.error.message}")
        error.try_sse = True
        return error
    if isinstance(exc, httpx2.HTTPError):
        return DiscoveryError("The connection to the server failed.")
    return DiscoveryError("The server's answer is not a valid MCP tool listing.")


async def _discover(
    url: str, *, headers: Mapping[str, str], limits: Limits, allow_loopback: bool | None
) -> Listing:
    budget = _Budget(limits.max_bytes)
    first_error: DiscoveryError | None = None
    with anyio.fail_after(limits.total_timeout):
        for kind in (TRANSPORT_STREAMABLE_HTTP, TRANSPORT_SSE):
            transport_cm = _transport(
                kind,
                url,
                headers=headers,
                limits=limits,
                budget=budget,
                allow_loopback=allow_loopback,
            )
            try:
                tools = await _list_with(transport_cm, limits)
            except Exception as exc:
                error = _as_discovery_error(exc, limits=limits)
                if first_error is None:
                    first_error = error
                if kind == TRANSPORT_STREAMABLE_HTTP and error.try_sse:
                    continue  # the server may only speak the older HTTP+SSE transport
                raise first_error from None
            return Listing(transport=kind, tools=tools)
    assert first_error is not None
    raise first_error


def list_remote_tools(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    allow_loopback: bool | None = None,
) -> Listing:
    """Connect to an MCP server and list all its tools; raises DiscoveryError.

    The event loop runs in a thread of its own, so this works from any caller: a Celery
    worker, or a thread that already runs a loop (an async view, Playwright's sync API).
    """
    limits = limits or Limits()
    run = functools.partial(
        anyio.run,
        functools.partial(
            _discover, url, headers=headers or {}, limits=limits, allow_loopback=allow_loopback
        ),
    )
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-discovery") as executor:
        try:
            return executor.submit(run).result()
        except DiscoveryError:
            raise
        except TimeoutError:
            raise _message_for(TimeoutError(), limits=limits) from None
        except Exception as exc:
            raise _as_discovery_error(exc, limits=limits) from None
