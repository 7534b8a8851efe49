"""Reads of tool-server connections, always through the Agent that owns them."""

from django.db.models import QuerySet

from apps.common.errors import NotFound
from apps.tools.models import McpDiscovery, McpServer, McpTool
from apps.workspaces.models import Agent


def server_list(*, agent: Agent) -> QuerySet[McpServer]:
    """An Agent's servers; the caller orders and pages them."""
    return McpServer.objects.filter(agent=agent)


def server_get(*, agent: Agent, server_id: str) -> McpServer:
    server = McpServer.objects.filter(agent=agent, pk=server_id).first()
    if server is None:
        raise NotFound("No such MCP server for this Agent.")
    return server


def tool_list(*, agent: Agent, server_id: str) -> QuerySet[McpTool]:
    """The tools the server listed at its last successful discovery (absent ones left out)."""
    server = server_get(agent=agent, server_id=server_id)
    return McpTool.objects.filter(server=server, removed_at__isnull=True)


def tool_get(*, agent: Agent, server_id: str, name: str) -> McpTool:
    tool = tool_list(agent=agent, server_id=server_id).filter(name=name).first()
    if tool is None:
        raise NotFound("No such tool on this MCP server.")
    return tool


def discovery_list(*, agent: Agent, server_id: str) -> QuerySet[McpDiscovery]:
    server = server_get(agent=agent, server_id=server_id)
    return McpDiscovery.objects.filter(server=server)
