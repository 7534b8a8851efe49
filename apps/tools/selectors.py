"""Reads of tool-server connections, always through the Agent that owns them."""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

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


# How many of an Agent's latest runs the "tools runs use" card reads: one range of the runs'
# (agent, created_at) index, whatever the history's length.
TOOLS_USED_RUNS = 1000


@dataclass(frozen=True)
class ToolUsed:
    name: str
    calls: int  # runs (of the latest TOOLS_USED_RUNS) that called it
    failures: int
    last_used_at: datetime | None
    server: McpServer | None  # the connected server offering a tool of this name, if any


def tools_used(*, agent: Agent) -> list[ToolUsed]:
    """The tools the Agent's recent runs called, built-in ones (that no connected MCP server
    offers) as well as MCP ones, most used first; knowledge search is listed while the Agent
    has it on, used or not yet. Read from the runs' recorded `tool_names`: what runs use, not
    what is configured."""
    from apps.activity.models import Run  # runs are activity's rows; only read here

    calls: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    last_used: dict[str, datetime] = {}
    recent = (
        Run.objects.filter(agent=agent)
        .order_by("-created_at", "-id")
        .values_list("tool_names", "failed_tool_names", "created_at")[:TOOLS_USED_RUNS]
    )
    for names, failed, created_at in recent:
        for name in set(names or ()):
            calls[name] += 1
            last_used.setdefault(name, created_at)
        failures.update(set(failed or ()))
    if agent.knowledge_search_enabled:
        calls.setdefault(KNOWLEDGE_SEARCH_TOOL, 0)
    offered = {
        tool.name: tool.server
        for tool in McpTool.objects.filter(
            server__agent=agent, name__in=list(calls), removed_at__isnull=True
        ).select_related("server")
    }
    return [
        ToolUsed(
            name=name,
            calls=count,
            failures=failures[name],
            last_used_at=last_used.get(name),
            server=offered.get(name),
        )
        for name, count in sorted(calls.items(), key=lambda item: (-item[1], item[0]))
    ]


# The Agent runtime's own knowledge tool (the same name the /mcp server offers).
KNOWLEDGE_SEARCH_TOOL = "search_knowledge"
