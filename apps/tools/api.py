"""/v1/mcp_servers...: third-party tool-server connections (extensions; contract 5.3 names
their scopes). Reads need `mcp_servers:read`; writes `mcp_servers:write` on a key created by a
workspace owner. Thin: parse, call a selector or service, render with plain functions."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.serializers import list_envelope
from apps.api.views import json_response
from apps.common.keyset import Keyset
from apps.tools import selectors, services
from apps.tools.rendering import discovery_to_dict, server_to_dict, tool_to_dict
from apps.tools.serializers import (
    McpDiscoveryOut,
    McpServerCreateIn,
    McpServerOut,
    McpServerUpdateIn,
    McpToolOut,
    McpToolUpdateIn,
)
from apps.workspaces.viewsets import AgentViewSet

READ, WRITE = "mcp_servers:read", "mcp_servers:write"
SERVER_KEYSET = Keyset("mcp-servers", "created_at", descending=True)
TOOL_KEYSET = Keyset("mcp-tools", "name", descending=False)
DISCOVERY_KEYSET = Keyset("mcp-discoveries", "created_at", descending=True)
McpServerList = list_envelope(McpServerOut, "McpServerList")
McpToolList = list_envelope(McpToolOut, "McpToolList")
McpDiscoveryList = list_envelope(McpDiscoveryOut, "McpDiscoveryList")

ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.STR, OpenApiParameter.PATH, description="The MCP server's id."
)
NAME_PARAMETER = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The tool's name."
)


def _validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class McpServerViewSet(AgentViewSet):
    openapi_tags = ["Tools"]
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "tools": READ,
        "changes": READ,
        "create": WRITE,
        "partial_update": WRITE,
        "destroy": WRITE,
        "discover": WRITE,
        "tool_update": WRITE,
    }
    extension_actions = tuple(required_scopes)
    error_statuses = {
        "create": (409,),
        "retrieve": (404,),
        "partial_update": (404, 409),
        "destroy": (404,),
        "discover": (404,),
        "tools": (404,),
        "tool_update": (404,),
        "changes": (404,),
    }

    @list_operation(
        summary="List MCP tool servers",
        description="The Agent's third-party tool-server connections, newest first.",
        parameters=PAGE_PARAMETERS,
        responses={200: McpServerList},
    )
    def list(self, request, agent_id: str | None = None):
        queryset = selectors.server_list(agent=self.agent)
        return self.paginated(queryset, keyset=SERVER_KEYSET, render=server_to_dict)

    @extend_schema(
        summary="Add an MCP tool server",
        description="Only public http(s) URLs are accepted (every redirect is checked again "
        "when connecting). Returns the server with `status: pending`; its discovery is queued. "
        "409 when the Agent already has a server at this URL.",
        request=McpServerCreateIn,
        responses={201: McpServerOut},
    )
    def create(self, request, agent_id: str | None = None):
        data = _validated(McpServerCreateIn, request.data)
        server = services.server_create(agent=self.agent, **data)
        return json_response(server_to_dict(server), status=201)

    @extend_schema(
        summary="Get an MCP tool server",
        parameters=[ID_PARAMETER],
        responses={200: McpServerOut},
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        return json_response(server_to_dict(selectors.server_get(agent=self.agent, server_id=id)))

    @extend_schema(
        summary="Change an MCP tool server",
        description="Rename, enable or disable, change the URL or replace the auth headers. "
        "A new URL or new headers queue a discovery.",
        parameters=[ID_PARAMETER],
        request=McpServerUpdateIn,
        responses={200: McpServerOut},
    )
    def partial_update(self, request, id: str, agent_id: str | None = None):
        data = _validated(McpServerUpdateIn, request.data)
        server = services.server_update(agent=self.agent, server_id=id, **data)
        return json_response(server_to_dict(server))

    @extend_schema(
        summary="Delete an MCP tool server",
        description="The server, its tools and its change log are deleted.",
        parameters=[ID_PARAMETER],
        responses={204: OpenApiResponse(description="Deleted.")},
    )
    def destroy(self, request, id: str, agent_id: str | None = None):
        services.server_delete(agent=self.agent, server_id=id)
        return HttpResponse(status=204)

    @extend_schema(
        summary="Discover an MCP server's tools now",
        description="Queues a discovery (`status: pending`) or joins the one already queued; "
        "poll the server until its status is `connected` or `failed`.",
        parameters=[ID_PARAMETER],
        request=None,
        responses={202: McpServerOut},
    )
    def discover(self, request, id: str, agent_id: str | None = None):
        server = services.server_discover_request(agent=self.agent, server_id=id)
        return json_response(server_to_dict(server), status=202)

    @list_operation(
        summary="List an MCP server's tools",
        description="The tools the server listed at its last successful discovery, by name.",
        parameters=[ID_PARAMETER, *PAGE_PARAMETERS],
        responses={200: McpToolList},
    )
    def tools(self, request, id: str, agent_id: str | None = None):
        queryset = selectors.tool_list(agent=self.agent, server_id=id)
        return self.paginated(queryset, keyset=TOOL_KEYSET, render=tool_to_dict)

    @extend_schema(
        summary="Enable or disable one tool",
        description="The choice is kept across rediscoveries.",
        parameters=[ID_PARAMETER, NAME_PARAMETER],
        request=McpToolUpdateIn,
        responses={200: McpToolOut},
    )
    def tool_update(self, request, id: str, name: str, agent_id: str | None = None):
        data = _validated(McpToolUpdateIn, request.data)
        tool = services.tool_set_enabled(
            agent=self.agent, server_id=id, name=name, enabled=data["enabled"]
        )
        return json_response(tool_to_dict(tool))

    @list_operation(
        summary="List an MCP server's discoveries and what each changed",
        description="Newest first: each discovery's outcome and the tools it added, removed, "
        "or found with a changed input schema or description.",
        parameters=[ID_PARAMETER, *PAGE_PARAMETERS],
        responses={200: McpDiscoveryList},
    )
    def changes(self, request, id: str, agent_id: str | None = None):
        queryset = selectors.discovery_list(agent=self.agent, server_id=id)
        return self.paginated(queryset, keyset=DISCOVERY_KEYSET, render=discovery_to_dict)
