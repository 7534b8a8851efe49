"""Rows to API objects: plain functions with exact field sets (header values never appear)."""

from apps.common.time import iso
from apps.tools.models import McpDiscovery, McpServer, McpTool


def server_to_dict(server: McpServer) -> dict:
    return {
        "object": "mcp_server",
        "id": server.pk,
        "agent_id": server.agent_id,
        "name": server.name,
        "url": server.url,
        "enabled": server.enabled,
        "status": server.status,
        "error_message": server.error_message,
        "transport": server.transport,
        "auth_header_names": list(server.auth_header_names),
        "tool_count": server.tool_count,
        "last_discovered_at": iso(server.last_discovered_at),
        "next_discovery_at": iso(server.next_discovery_at),
        "created_at": iso(server.created_at),
        "updated_at": iso(server.updated_at),
    }


def tool_to_dict(tool: McpTool) -> dict:
    return {
        "object": "mcp_tool",
        "id": tool.pk,
        "server_id": tool.server_id,
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "enabled": tool.enabled,
        "first_seen_at": iso(tool.first_seen_at),
        "updated_at": iso(tool.updated_at),
    }


def discovery_to_dict(discovery: McpDiscovery) -> dict:
    return {
        "object": "mcp_discovery",
        "id": discovery.pk,
        "server_id": discovery.server_id,
        "status": discovery.status,
        "trigger": discovery.trigger,
        "error_message": discovery.error_message,
        "transport": discovery.transport,
        "tool_count": discovery.tool_count,
        "tools_added": list(discovery.tools_added),
        "tools_removed": list(discovery.tools_removed),
        "tools_schema_changed": list(discovery.tools_schema_changed),
        "tools_description_changed": list(discovery.tools_description_changed),
        "started_at": iso(discovery.started_at),
        "finished_at": iso(discovery.finished_at),
    }
