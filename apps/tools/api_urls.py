"""Routes of this app under /v1, served in both forms by config.api_urls."""

from apps.api.routing import Route
from apps.tools.api import McpServerViewSet

routes: list[Route] = [
    Route(
        "mcp_servers",
        McpServerViewSet.as_view({"get": "list", "post": "create"}),
        "mcp-server-list",
    ),
    Route(
        "mcp_servers/<str:id>",
        McpServerViewSet.as_view(
            {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
        ),
        "mcp-server-detail",
    ),
    Route(
        "mcp_servers/<str:id>/discover",
        McpServerViewSet.as_view({"post": "discover"}),
        "mcp-server-discover",
    ),
    Route("mcp_servers/<str:id>/tools", McpServerViewSet.as_view({"get": "tools"}), "mcp-tools"),
    Route(
        "mcp_servers/<str:id>/tools/<path:name>",
        McpServerViewSet.as_view({"patch": "tool_update"}),
        "mcp-tool-detail",
    ),
    Route(
        "mcp_servers/<str:id>/changes",
        McpServerViewSet.as_view({"get": "changes"}),
        "mcp-server-changes",
    ),
]
agent_only_routes: list[Route] = []
