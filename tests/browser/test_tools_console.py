"""The Tools page in Chromium: an owner adds a real MCP server (built with the SDK), watches
the status poll until a real Celery worker has discovered its tools, toggles a tool, runs
discovery again after the server gained a tool, and reads the change log."""

from __future__ import annotations

import pytest
from django.conf import settings

from apps.tools.models import McpServer, McpTool
from tests.tools.mcp_servers import add_tool, start_streamable, weather_server
from tests.workers import WorkerProcess


@pytest.fixture
def mcp_server():
    server = weather_server()
    running = start_streamable(server)
    running.mcp = server
    yield running
    running.stop()


@pytest.fixture
def tools_worker(transactional_db, settings):
    from config.celery import app

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    app.control.purge()
    worker = WorkerProcess(NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1").start()
    yield worker
    worker.stop()


@pytest.mark.worker
def test_add_a_server_toggle_a_tool_and_rediscover(console_page, mcp_server, tools_worker):
    settings.NETGUARD_ALLOW_LOOPBACK = True  # the console checks the URL too (same process)
    try:
        _flow(console_page, mcp_server)
    finally:
        settings.NETGUARD_ALLOW_LOOPBACK = False


def _flow(page, mcp_server) -> None:
    page.goto(f"{page.live_server_url}/tools/")
    assert "No tool servers yet" in page.locator("#servers").inner_text()
    page.fill("#id_server_url", mcp_server.url)
    page.fill("#id_server_name", "Weather")
    page.locator("input[name=header_name]").first.fill("Authorization")
    page.locator("input[name=header_value]").first.fill("Bearer browser-secret")
    page.click("#add-server-button")

    # The detail page polls while discovery runs, then reloads with the tools.
    page.locator('#server-status [data-status="connected"]').wait_for(timeout=60_000)
    page.locator(".tool-row[data-tool='forecast']").wait_for()
    assert page.locator(".tool-row").count() == 2
    assert "browser-secret" not in page.content()
    assert any(h.get("authorization") == "Bearer browser-secret" for h in mcp_server.requests)
    server = McpServer.objects.get()

    row = page.locator(".tool-row[data-tool='forecast']")
    row.locator(".toggle-button").click()
    page.locator(".tool-row[data-tool='forecast'] .toggle-button[aria-pressed='false']").wait_for()
    assert McpTool.objects.get(server=server, name="forecast").enabled is False

    add_tool(mcp_server.mcp, "radar", lambda region: "radar", description="Radar images.")
    page.click("#discover-button")
    page.locator(".tool-row[data-tool='radar']").wait_for(timeout=60_000)
    log = page.locator("#change-log").inner_text()
    assert "Discover now" in log and "Added: radar" in log
    # The owner's choice survived, and the new tool waits for one.
    assert page.locator(".tool-row[data-tool='forecast'] .toggle-button").inner_text() == "Disabled"
    assert page.locator(".tool-row[data-tool='radar'] .toggle-button").inner_text() == "Disabled"
