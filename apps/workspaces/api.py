"""/v1/agents... and /v1/workspaces (extensions: contract 4.5 names these operations, their
paths and shapes are ours). Thin: parse, call a selector or service, render plainly.

Agent operations act on any Agent of the key's workspace, active or archived (the path's
`agentId` names the target, not the acting Agent); another workspace's Agent is not_found.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.views import json_response, require_no_body_fields
from apps.common.keyset import Keyset
from apps.workspaces import selectors, services
from apps.workspaces.models import Agent, ApiKey
from apps.workspaces.rendering import agent_to_dict, revision_to_dict, workspace_to_dict
from apps.workspaces.serializers import (
    AgentCreateIn,
    AgentListOut,
    AgentOut,
    AgentRevisionListOut,
    AgentRevisionOut,
    AgentUpdateIn,
    WorkspaceListOut,
)
from apps.workspaces.viewsets import AgentViewSet

AGENT_KEYSET = Keyset("agents", "created_at", descending=True)
REVISION_KEYSET = Keyset("agent-revisions", "number", descending=True)
WORKSPACE_KEYSET = Keyset("workspaces", "created_at", descending=True)

READ, WRITE, ARCHIVE = "agents:read", "agents:write", "agents:archive"

AGENT_PARAMETER = OpenApiParameter(
    "agent_id",
    {"type": "string", "minLength": 1},
    OpenApiParameter.PATH,
    description="Any Agent of the key's workspace, active or archived.",
)
REVISION_PARAMETER = OpenApiParameter(
    "revision_id", {"type": "string", "minLength": 1}, OpenApiParameter.PATH
)
STATUS_PARAMETER = OpenApiParameter(
    "status",
    OpenApiTypes.STR,
    enum=list(Agent.Status.values),
    description="Only Agents in this status; all of them when absent.",
)


def _validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class WorkspaceAgentsViewSet(AgentViewSet):
    """Base of the Agent management views: `self.agent` stays the key's own Agent (the
    acting one); `self.target` is the Agent the path names, looked up in the key's workspace
    before the body is read, so another workspace's Agent is not_found whatever is sent."""

    openapi_tags = ["Agents"]
    target: Agent

    @property
    def key(self) -> ApiKey:
        """The acting API key (Agent management serves API keys only, never browser tokens)."""
        return self.credential.key

    def resolve_agent(self, agent_id: str | None) -> Agent:
        return self.key.agent

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if "agent_id" in kwargs:
            self.target = selectors.agent_get(
                workspace_id=self.agent.workspace_id, agent_id=kwargs["agent_id"]
            )


class AgentManagementViewSet(WorkspaceAgentsViewSet):
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "create": WRITE,
        "partial_update": WRITE,
        "archive": ARCHIVE,
        "restore": ARCHIVE,
    }
    extension_actions = tuple(required_scopes)
    error_statuses = {
        "retrieve": (404,),
        "partial_update": (404, 409),
        "archive": (404, 409),
        "restore": (404, 409),
    }

    @list_operation(
        summary="List Agents",
        description="The Agents of the key's workspace, newest first; archived ones included "
        "unless `status` says otherwise.",
        parameters=[STATUS_PARAMETER, *PAGE_PARAMETERS],
        responses={200: AgentListOut},
    )
    def list(self, request):
        queryset = selectors.agent_list(
            workspace_id=self.agent.workspace_id, status=request.query_params.get("status")
        )
        return self.paginated(queryset, keyset=AGENT_KEYSET, render=agent_to_dict)

    @extend_schema(
        summary="Create an Agent",
        description="A new active Agent in the key's workspace; its configuration becomes "
        "revision 1. Only `name` is required.",
        request=AgentCreateIn,
        responses={201: AgentOut},
    )
    def create(self, request):
        data = _validated(AgentCreateIn, request.data)
        agent = services.agent_create(
            workspace=self.agent.workspace, actor=services.actor_for_key(self.key), **data
        )
        return json_response(agent_to_dict(agent), status=201)

    @extend_schema(
        summary="Retrieve an Agent",
        description="The Agent's current configuration and status.",
        parameters=[AGENT_PARAMETER],
        responses={200: AgentOut},
    )
    def retrieve(self, request, agent_id: str):
        return json_response(agent_to_dict(self.target))

    @extend_schema(
        summary="Update an Agent's configuration",
        description="Change any of the configuration fields. A change is kept as the next "
        "revision (who, when, which fields); sending the current values changes nothing. 409 "
        "while the Agent is archived.",
        parameters=[AGENT_PARAMETER],
        request=AgentUpdateIn,
        responses={200: AgentOut},
    )
    def partial_update(self, request, agent_id: str):
        data = _validated(AgentUpdateIn, request.data)
        agent = services.agent_update(
            workspace_id=self.agent.workspace_id,
            agent_id=self.target.pk,
            changes=data,
            actor=services.actor_for_key(self.key),
        )
        return json_response(agent_to_dict(agent))

    @extend_schema(
        summary="Archive an Agent",
        description="Reversible, nothing is deleted: the Agent's keys answer 401 and its "
        "scheduled knowledge refreshes and webhook deliveries wait until it is restored. 409 "
        "when already archived, when it is the key's own Agent (the key would lock itself "
        "out), or when it is the workspace's last active Agent.",
        parameters=[AGENT_PARAMETER],
        request=None,
        responses={200: AgentOut},
    )
    def archive(self, request, agent_id: str):
        require_no_body_fields(request)
        agent = services.agent_archive(
            workspace_id=self.agent.workspace_id, agent_id=self.target.pk, acting_key=self.key
        )
        return json_response(agent_to_dict(agent))

    @extend_schema(
        summary="Restore an archived Agent",
        description="The Agent is active again with everything it had: its keys work, "
        "refreshes that fell due and deliveries that waited go out. 409 when not archived.",
        parameters=[AGENT_PARAMETER],
        request=None,
        responses={200: AgentOut},
    )
    def restore(self, request, agent_id: str):
        require_no_body_fields(request)
        agent = services.agent_restore(
            workspace_id=self.agent.workspace_id, agent_id=self.target.pk
        )
        return json_response(agent_to_dict(agent))


class AgentRevisionViewSet(WorkspaceAgentsViewSet):
    required_scopes = {"list": READ, "retrieve": READ, "restore": WRITE}
    extension_actions = tuple(required_scopes)
    error_statuses = {"list": (404,), "retrieve": (404,), "restore": (404, 409)}

    @list_operation(
        summary="List an Agent's revisions",
        description="Every configuration the Agent has had, newest first: revision 1 is its "
        "creation, each update or restore adds one.",
        parameters=[AGENT_PARAMETER, *PAGE_PARAMETERS],
        responses={200: AgentRevisionListOut},
    )
    def list(self, request, agent_id: str):
        queryset = selectors.agent_revision_list(agent=self.target)
        return self.paginated(queryset, keyset=REVISION_KEYSET, render=revision_to_dict)

    @extend_schema(
        summary="Retrieve a revision",
        description="One revision with the whole configuration it recorded.",
        parameters=[AGENT_PARAMETER, REVISION_PARAMETER],
        responses={200: AgentRevisionOut},
    )
    def retrieve(self, request, agent_id: str, revision_id: str):
        revision = selectors.agent_revision_get(agent=self.target, revision_id=revision_id)
        return json_response(revision_to_dict(revision))

    @extend_schema(
        summary="Restore a revision",
        description="Makes the revision's configuration current again. The restore is itself "
        "recorded as a new revision (`kind: restored`), so it can be undone the same way; "
        "restoring the current configuration changes nothing. 409 while the Agent is archived.",
        parameters=[AGENT_PARAMETER, REVISION_PARAMETER],
        request=None,
        responses={200: AgentOut},
    )
    def restore(self, request, agent_id: str, revision_id: str):
        require_no_body_fields(request)
        agent = services.agent_revision_restore(
            workspace_id=self.agent.workspace_id,
            agent_id=self.target.pk,
            revision_id=revision_id,
            actor=services.actor_for_key(self.key),
        )
        return json_response(agent_to_dict(agent))


class WorkspaceViewSet(WorkspaceAgentsViewSet):
    openapi_tags = ["Workspaces"]
    required_scopes = {"list": "workspaces:read"}
    extension_actions = ("list",)

    @list_operation(
        summary="List granted workspaces",
        description="The workspaces this credential may act in, with its creator's role in "
        "each. An API key is granted exactly its own Agent's workspace.",
        parameters=PAGE_PARAMETERS,
        responses={200: WorkspaceListOut},
    )
    def list(self, request):
        queryset = selectors.workspace_list_for_key(key=self.key)
        return self.paginated(queryset, keyset=WORKSPACE_KEYSET, render=workspace_to_dict)
