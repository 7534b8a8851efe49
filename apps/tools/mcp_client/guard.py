"""The network guard on every request of a discovery: an httpx2 transport that sends each request
(and checks each redirect) only to an address `check_url` accepted, one byte budget for
everything the server sends, compressed bodies refused, and the SDK's transports built on it."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from apps.common.netguard import BlockedURL, check_url
from apps.tools.mcp_client.results import TRANSPORT_STREAMABLE_HTTP, DiscoveryError, Limits

USER_AGENT = "AgentConsoleBot/1.0 (+tool discovery)"


_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


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
