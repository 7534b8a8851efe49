"""Fixtures of the tool-server tests: real MCP servers on 127.0.0.1 (loopback opened by the
test-only setting), and tight discovery limits so timeouts cost a second, not a minute."""

from __future__ import annotations

import pytest

from tests.tools.mcp_servers import (
    HangingServer,
    start_sse_only,
    start_streamable,
    weather_server,
)


@pytest.fixture
def loopback(settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True


@pytest.fixture(autouse=True)
def quick_limits(settings):
    settings.TOOLS_DISCOVERY_CONNECT_TIMEOUT = 2.0
    settings.TOOLS_DISCOVERY_READ_TIMEOUT = 1.0
    settings.TOOLS_DISCOVERY_TOTAL_TIMEOUT = 5.0


@pytest.fixture
def weather():
    return weather_server()


@pytest.fixture
def streamable(weather):
    running = start_streamable(weather)
    yield running
    running.stop()


@pytest.fixture
def sse_only(weather):
    running = start_sse_only(weather)
    yield running
    running.stop()


@pytest.fixture
def hanging():
    server = HangingServer().start()
    yield server
    server.stop()
