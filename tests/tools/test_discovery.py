"""Discovery in-process (the task's logic): tools stored, owner choices kept across
rediscoveries, the change log, failures, the daily sweep and the encrypted headers."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from apps.tools import discovery, services, tasks
from apps.tools.models import McpDiscovery, McpServer, McpTool
from tests.tools.mcp_servers import add_tool

pytestmark = pytest.mark.django_db


def _add(agent, url: str, **kwargs) -> McpServer:
    return services.server_create(agent=agent, url=url, name="Weather", **kwargs)


def test_first_discovery_stores_the_tools_enabled(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    assert server.status == "pending"
    assert tasks.discover.run(server.pk) == "connected"
    server.refresh_from_db()
    assert server.status == "connected"
    assert server.error_message is None
    assert server.transport == "streamable_http"
    assert server.tool_count == 2
    assert server.last_discovered_at is not None
    assert server.next_discovery_at == server.last_discovered_at + timedelta(days=1)
    tools = {tool.name: tool for tool in server.tools.all()}
    assert set(tools) == {"forecast", "alerts"}
    assert all(tool.enabled for tool in tools.values())
    assert tools["alerts"].input_schema["required"] == ["region"]
    change = McpDiscovery.objects.get(server=server)
    assert (change.status, change.trigger, change.tools_added) == (
        "succeeded",
        "created",
        ["alerts", "forecast"],
    )


def test_rediscovery_records_added_removed_and_changed_tools_and_keeps_choices(
    agent, loopback, streamable, weather
):
    server = _add(agent, streamable.url)
    tasks.discover.run(server.pk)
    services.tool_set_enabled(agent=agent, server_id=server.pk, name="forecast", enabled=False)

    weather.remove_tool("alerts")
    add_tool(weather, "radar", lambda region: "radar image", description="Radar of a region.")
    weather.remove_tool("forecast")
    add_tool(weather, "forecast", lambda city, hours=24: "x", description="Hourly forecast.")
    services.server_discover_request(agent=agent, server_id=server.pk)
    assert tasks.discover.run(server.pk) == "connected"

    change = McpDiscovery.objects.filter(server=server).order_by("-created_at").first()
    assert change.trigger == "manual"
    assert change.tools_added == ["radar"]
    assert change.tools_removed == ["alerts"]
    assert change.tools_schema_changed == ["forecast"]
    assert change.tools_description_changed == ["forecast"]
    present = {t.name: t for t in McpTool.objects.filter(server=server, removed_at__isnull=True)}
    assert set(present) == {"forecast", "radar"}
    assert present["forecast"].enabled is False  # the owner's choice survived
    assert present["radar"].enabled is False  # tools that appear later wait for the owner
    assert "hours" in present["forecast"].input_schema["properties"]
    server.refresh_from_db()
    assert server.tool_count == 2


def test_a_tool_that_returns_gets_its_choice_back(agent, loopback, streamable, weather):
    server = _add(agent, streamable.url)
    tasks.discover.run(server.pk)
    services.tool_set_enabled(agent=agent, server_id=server.pk, name="alerts", enabled=False)
    weather.remove_tool("alerts")
    services.server_discover_request(agent=agent, server_id=server.pk)
    tasks.discover.run(server.pk)
    assert not McpTool.objects.filter(server=server, name="alerts", removed_at=None).exists()

    add_tool(weather, "alerts", lambda region: "x", description="Weather alerts of a region.")
    services.server_discover_request(agent=agent, server_id=server.pk)
    tasks.discover.run(server.pk)
    change = McpDiscovery.objects.filter(server=server).order_by("-created_at").first()
    assert change.tools_added == ["alerts"]
    assert McpTool.objects.get(server=server, name="alerts").enabled is False


def test_unchanged_rediscovery_logs_no_changes(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    tasks.discover.run(server.pk)
    services.server_discover_request(agent=agent, server_id=server.pk)
    tasks.discover.run(server.pk)
    change = McpDiscovery.objects.filter(server=server).order_by("-created_at").first()
    assert change.status == "succeeded"
    assert not change.has_changes


def test_sse_only_server_is_connected_over_sse(agent, loopback, sse_only):
    server = _add(agent, sse_only.url)
    assert tasks.discover.run(server.pk) == "connected"
    server.refresh_from_db()
    assert server.transport == "sse"
    assert server.tool_count == 2


def test_hanging_server_fails_with_a_clear_message(agent, loopback, hanging):
    server = _add(agent, hanging.url)
    assert tasks.discover.run(server.pk) == "failed"
    server.refresh_from_db()
    assert server.status == "failed"
    assert server.error_message.startswith("The server did not answer in time")
    assert server.claimed_until is None
    change = McpDiscovery.objects.get(server=server)
    assert change.status == "failed"
    assert change.error_message == server.error_message


def test_redirect_to_a_private_address_fails_the_server(agent, loopback, httpserver):
    httpserver.expect_request("/mcp").respond_with_data(
        "", status=308, headers={"Location": "http://10.0.0.1/mcp"}
    )
    server = _add(agent, httpserver.url_for("/mcp"))
    assert tasks.discover.run(server.pk) == "failed"
    server.refresh_from_db()
    assert server.error_message.startswith("Blocked by the network guard")
    assert "10.0.0.1" in server.error_message


def test_failed_rediscovery_keeps_the_tools(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    tasks.discover.run(server.pk)
    streamable.stop()
    services.server_discover_request(agent=agent, server_id=server.pk)
    assert tasks.discover.run(server.pk) == "failed"
    server.refresh_from_db()
    assert server.status == "failed"
    assert server.error_message == "Could not connect to the server."
    assert server.tool_count == 2
    assert McpTool.objects.filter(server=server, removed_at=None).count() == 2


def test_auth_headers_are_encrypted_at_rest_and_sent(agent, loopback, streamable):
    server = _add(agent, streamable.url, auth_headers={"Authorization": "Bearer tok-123"})
    assert server.auth_header_names == ["Authorization"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM tools_mcp_server WHERE id = %s", [server.pk])
        row = cursor.fetchone()
    assert "tok-123" not in repr(row)
    tasks.discover.run(server.pk)
    assert any(h.get("authorization") == "Bearer tok-123" for h in streamable.requests)


def test_headers_unreadable_after_a_key_change_fail_with_a_message(
    agent, loopback, streamable, settings
):
    server = _add(agent, streamable.url, auth_headers={"Authorization": "Bearer tok"})
    settings.TOOLS_ENCRYPTION_KEY = "a different key"
    assert tasks.discover.run(server.pk) == "failed"
    server.refresh_from_db()
    assert "cannot be decrypted" in server.error_message
    assert streamable.requests == []


def test_a_server_changed_during_discovery_is_discovered_again(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    claimed = McpServer.objects.get(pk=server.pk)
    McpServer.objects.filter(pk=server.pk).update(url="http://127.0.0.1:1/other")
    from apps.tools.mcp_client import Listing

    outcome = discovery._finish(
        claimed, started_at=timezone.now(), listing=Listing(transport="sse", tools=[])
    )
    assert outcome == "again"
    server.refresh_from_db()
    assert server.status == "pending"
    assert not McpDiscovery.objects.filter(server=server).exists()


def test_deleted_server_makes_the_task_obsolete(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    services.server_delete(agent=agent, server_id=server.pk)
    assert tasks.discover.run(server.pk) == "obsolete"


def test_a_claimed_discovery_is_not_run_twice(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    McpServer.objects.filter(pk=server.pk).update(
        claimed_until=timezone.now() + timedelta(minutes=5)
    )
    assert tasks.discover.run(server.pk) == "busy"
    assert streamable.requests == []


def test_daily_sweep_rediscovers_due_enabled_servers(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    disabled = _add(agent, streamable.url + "?b=1")
    tasks.discover.run(server.pk)
    tasks.discover.run(disabled.pk)
    services.server_update(agent=agent, server_id=disabled.pk, enabled=False)
    assert discovery.servers_discover_due() == []

    with time_machine.travel(timezone.now() + timedelta(days=1, minutes=1)):
        assert discovery.servers_discover_due() == [server.pk]
        server.refresh_from_db()
        assert (server.status, server.pending_trigger) == ("pending", "schedule")
        assert discovery.servers_discover_due() == []  # claimed once
        assert tasks.discover.run(server.pk) == "connected"
    change = McpDiscovery.objects.filter(server=server).order_by("-created_at").first()
    assert change.trigger == "schedule"


def test_sweep_requeues_a_discovery_whose_worker_died(agent, loopback, streamable):
    server = _add(agent, streamable.url)
    McpServer.objects.filter(pk=server.pk).update(
        claimed_until=timezone.now() - timedelta(seconds=1)
    )
    assert discovery.servers_discover_due() == [server.pk]
    assert tasks.discover.run(server.pk) == "connected"


def test_discovery_is_queued_once_after_commit(agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        server = services.server_create(agent=agent, url="https://93.184.215.14/mcp")
        services.server_discover_request(agent=agent, server_id=server.pk)  # joins: pending
    assert len(callbacks) == 1
