"""Factories for the tools models: keyword arguments, sensible defaults, saved rows."""

import itertools

from apps.tools.models import McpServer

_counter = itertools.count(1)


def tool_server_factory(*, agent, **fields) -> McpServer:
    """A tool-server connection as discovery would leave it (no network is touched)."""
    n = next(_counter)
    defaults = {"name": f"Server {n}", "url": f"https://tools{n}.example.com/mcp"}
    defaults.update(fields)
    return McpServer.objects.create(agent=agent, **defaults)
