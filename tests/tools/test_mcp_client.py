"""The guarded MCP client against real SDK-built servers: both transports, pagination-free
listing, the network guard on every request and redirect, timeouts and size caps."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx2
import pytest

from apps.common.netguard import BlockedURL
from apps.tools.mcp_client import DiscoveryError, GuardedTransport, Limits, list_remote_tools
from apps.tools.mcp_client.guard import _Budget
from tests.tools.mcp_servers import add_tool

FAST = Limits(connect_timeout=2, read_timeout=1, total_timeout=5)


def _in_fresh_thread(call):
    # Not on the test's thread: another test in this process may have left a loop there
    # (Playwright's sync API does).
    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(call).result()


def _get(url: str, *, budget: int, follow_redirects: bool = False) -> httpx2.Response:
    """One GET through GuardedTransport, body read, as the SDK's transports would send it."""

    async def get():
        transport = GuardedTransport(budget=_Budget(budget), allow_loopback=True)
        async with httpx2.AsyncClient(transport=transport, follow_redirects=follow_redirects) as c:
            response = await c.get(url)
            await response.aread()
            return response

    return _in_fresh_thread(lambda: anyio.run(get))


def test_lists_the_tools_of_a_streamable_http_server(streamable):
    listing = list_remote_tools(streamable.url, allow_loopback=True, limits=FAST)
    assert listing.transport == "streamable_http"
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == {"forecast", "alerts"}
    assert tools["forecast"].description == "Forecast for a city."
    schema = tools["forecast"].input_schema
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"city", "days"}
    assert schema["required"] == ["city"]


def test_falls_back_to_sse_for_a_server_without_streamable_http(sse_only):
    listing = list_remote_tools(sse_only.url, allow_loopback=True, limits=FAST)
    assert listing.transport == "sse"
    assert {tool.name for tool in listing.tools} == {"forecast", "alerts"}


def test_sends_the_auth_headers_and_asks_for_uncompressed_bodies(streamable):
    list_remote_tools(
        streamable.url,
        headers={"Authorization": "Bearer s3cret", "X-Team": "blue"},
        allow_loopback=True,
        limits=FAST,
    )
    posts = [headers for headers in streamable.requests if headers.get("authorization")]
    assert posts, streamable.requests
    assert all(headers["authorization"] == "Bearer s3cret" for headers in posts)
    assert all(headers["x-team"] == "blue" for headers in posts)
    assert all(headers["accept-encoding"] == "identity" for headers in posts)
    assert all(headers["host"] == f"127.0.0.1:{streamable.port}" for headers in posts)


def test_loopback_is_refused_without_the_test_setting_and_nothing_connects(streamable):
    with pytest.raises(DiscoveryError, match=r"network guard.*not public \(127\.0\.0\.1\)"):
        list_remote_tools(streamable.url, allow_loopback=False, limits=FAST)
    assert streamable.requests == []


def test_a_name_resolving_to_loopback_is_refused_before_connecting(streamable):
    url = streamable.url.replace("127.0.0.1", "localhost")
    with pytest.raises(DiscoveryError, match="localhost resolves to an address that is not public"):
        list_remote_tools(url, allow_loopback=False, limits=FAST)
    assert streamable.requests == []


def test_a_hanging_server_is_bounded_by_the_read_timeout(hanging):
    started = time.monotonic()
    with pytest.raises(DiscoveryError, match="did not answer in time"):
        list_remote_tools(hanging.url, allow_loopback=True, limits=FAST)
    assert time.monotonic() - started < FAST.total_timeout + 1
    assert hanging.connections, "the client did connect and wait"


def test_more_tools_than_the_cap_stop_discovery(streamable, weather):
    for index in range(5):
        add_tool(weather, f"extra_{index}", lambda: "x", description="extra")
    limits = Limits(connect_timeout=2, read_timeout=1, total_timeout=5, max_tools=4)
    with pytest.raises(DiscoveryError, match="more than 4 tools"):
        list_remote_tools(streamable.url, allow_loopback=True, limits=limits)


def test_bytes_past_the_budget_stop_discovery(streamable, weather):
    add_tool(weather, "verbose", lambda: "x", description="word " * 3000)
    limits = Limits(connect_timeout=2, read_timeout=1, total_timeout=5, max_bytes=8 * 1024)
    with pytest.raises(DiscoveryError, match="more than 8 KB"):
        list_remote_tools(streamable.url, allow_loopback=True, limits=limits)


def test_a_tool_name_longer_than_128_characters_fails_discovery(streamable, weather):
    add_tool(weather, "t" * 129, lambda: "x")
    with pytest.raises(DiscoveryError, match="longer than 128"):
        list_remote_tools(streamable.url, allow_loopback=True, limits=FAST)


def test_a_redirect_to_a_private_address_is_refused_without_connecting(httpserver):
    httpserver.expect_request("/mcp").respond_with_data(
        "", status=307, headers={"Location": "http://169.254.169.254/latest/meta-data"}
    )
    with pytest.raises(DiscoveryError) as caught:
        list_remote_tools(httpserver.url_for("/mcp"), allow_loopback=True, limits=FAST)
    message = str(caught.value)
    assert message.startswith("Blocked by the network guard: The server redirected")
    assert "169.254.169.254" in message


def test_the_transport_checks_every_hop_a_client_follows(httpserver):
    """Whoever follows redirects (the SDK does, within an origin), each hop goes through the
    guard: here httpx2 itself follows, and the second hop is refused before any connection."""
    httpserver.expect_request("/start").respond_with_data(
        "", status=302, headers={"Location": "http://10.0.0.1/next"}
    )
    with pytest.raises(BlockedURL, match=r"10\.0\.0\.1"):
        _get(httpserver.url_for("/start"), budget=1024 * 1024, follow_redirects=True)


def test_the_transport_refuses_private_addresses_outright():
    for url in ("http://10.0.0.1/mcp", "http://169.254.169.254/", "http://[::ffff:10.0.0.1]/"):
        with pytest.raises(BlockedURL, match="not public"):
            _get(url, budget=1024)


def test_a_compressed_body_is_refused(httpserver):
    httpserver.expect_request("/gz").respond_with_data(
        b"\x1f\x8b" + bytes(20), headers={"Content-Encoding": "gzip"}
    )
    with pytest.raises(DiscoveryError, match="compressed"):
        _get(httpserver.url_for("/gz"), budget=1024 * 1024)


def test_a_declared_body_past_the_budget_is_refused_before_reading(httpserver):
    httpserver.expect_request("/big").respond_with_data(b"x" * 4096)
    with pytest.raises(DiscoveryError, match="more than 1 KB"):
        _get(httpserver.url_for("/big"), budget=1024)


def test_discovery_works_from_a_thread_that_already_runs_a_loop(streamable):
    """Playwright's sync API and async views leave a loop running in the caller's thread."""

    async def caller_with_a_running_loop():
        return list_remote_tools(streamable.url, allow_loopback=True, limits=FAST)

    listing = _in_fresh_thread(lambda: asyncio.run(caller_with_a_running_loop()))
    assert {tool.name for tool in listing.tools} == {"forecast", "alerts"}
