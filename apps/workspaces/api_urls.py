"""Routes of this app under /v1. Integration keys are served in both forms; Agent and workspace
management only in the plain form: `/v1/agents/{agentId}`
names the Agent to manage, so an agent-scoped form (`/v1/agents/{agentId}/agents`) would say
nothing more. They coexist with the other apps' `/v1/agents/{agentId}/<path>` routes because
none of those paths is `archive`, `restore` or `revisions`."""

from apps.api.routing import Route
from apps.workspaces.api import AgentManagementViewSet, AgentRevisionViewSet, WorkspaceViewSet
from apps.workspaces.audit_api import AuditEventViewSet
from apps.workspaces.connection_api import ConnectionViewSet
from apps.workspaces.key_api import ApiKeyViewSet

# What authenticated the request: both path forms, composed first in /v1 (config.api_urls).
connection_routes: list[Route] = [
    Route("connection", ConnectionViewSet.as_view({"get": "retrieve"}), "connection"),
]

plain_routes: list[Route] = [
    Route("workspaces", WorkspaceViewSet.as_view({"get": "list"}), "workspace-list"),
    # The workspace's audit log: one per workspace, so no agent-scoped form.
    Route("audit_events", AuditEventViewSet.as_view({"get": "list"}), "audit-event-list"),
    Route(
        "agents",
        AgentManagementViewSet.as_view({"get": "list", "post": "create"}),
        "agent-list",
    ),
    Route(
        "agents/<str:agent_id>",
        AgentManagementViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        "agent-detail",
    ),
    Route(
        "agents/<str:agent_id>/archive",
        AgentManagementViewSet.as_view({"post": "archive"}),
        "agent-archive",
    ),
    Route(
        "agents/<str:agent_id>/restore",
        AgentManagementViewSet.as_view({"post": "restore"}),
        "agent-restore",
    ),
    Route(
        "agents/<str:agent_id>/revisions",
        AgentRevisionViewSet.as_view({"get": "list"}),
        "agent-revision-list",
    ),
    Route(
        "agents/<str:agent_id>/revisions/<str:revision_id>",
        AgentRevisionViewSet.as_view({"get": "retrieve"}),
        "agent-revision-detail",
    ),
    Route(
        "agents/<str:agent_id>/revisions/<str:revision_id>/restore",
        AgentRevisionViewSet.as_view({"post": "restore"}),
        "agent-revision-restore",
    ),
]

# Integration keys: both path forms (the agent-scoped one names the key's own Agent).
routes: list[Route] = [
    Route("api_keys", ApiKeyViewSet.as_view({"get": "list", "post": "create"}), "api-key-list"),
    Route(
        "api_keys/<str:id>/revoke",
        ApiKeyViewSet.as_view({"post": "revoke"}),
        "api-key-revoke",
    ),
]
