"""Tool servers, a server's tools and its change log: "Older" then "Newer" comes back."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.tools.models import McpDiscovery, McpTool
from tests.paging import assert_older_then_newer_retraces
from tests.tools.factories import tool_server_factory

pytestmark = pytest.mark.django_db


def test_servers_tools_and_changes_page_back(owner_client, agent):
    servers = [
        tool_server_factory(agent=agent, name=f"Server {n:02}", url=f"https://s{n}.example/mcp")
        for n in range(55)
    ]
    assert_older_then_newer_retraces(
        owner_client,
        "/tools/",
        older_id="older-servers",
        newer_id="newer-servers",
        row_pattern=r'id="server-row-(mcp_\w+)"',
    )

    server = servers[0]
    McpTool.objects.bulk_create(
        McpTool(server=server, name=f"tool_{n:03}", input_schema={"type": "object"})
        for n in range(60)
    )
    now = timezone.now()
    McpDiscovery.objects.bulk_create(
        McpDiscovery(
            server=server,
            status="succeeded",
            trigger="manual",
            started_at=now - timedelta(minutes=n),
            finished_at=now - timedelta(minutes=n),
            created_at=now - timedelta(minutes=n),
        )
        for n in range(60)
    )
    detail = f"/tools/{server.pk}/"
    assert_older_then_newer_retraces(
        owner_client,
        detail,
        older_id="more-tools",
        newer_id="previous-tools",
        row_pattern=r'id="tool-row-(mcpt_\w+)"',
    )
    assert_older_then_newer_retraces(
        owner_client,
        detail,
        older_id="older-changes",
        newer_id="newer-changes",
        row_pattern=r'id="change-(mcpd_\w+)"',
    )
