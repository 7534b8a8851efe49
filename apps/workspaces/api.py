"""/v1/agents... and /v1/workspaces (extensions: contract 4.5 names these operations, their
paths and shapes are ours). Thin: parse, call a selector or service, render plainly.

Agent operations act on any Agent of the key's workspace, active or archived (the path's
`agentId` names the target, not the acting Agent); another workspace's Agent is not_found.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.serializers import list_envelope
from apps.api.views import json_response, require_no_body_fields
from apps.common.errors import BadRequest, Conflict
from apps.common.keyset import Keyset
from apps.common.time import iso
from apps.workspaces import selectors, services
from apps.workspaces.credentials import KeyCredential
from apps.workspaces.models import ActorType, Agent, ApiKey
from apps.workspaces.rendering import (
    agent_to_dict,
    api_key_to_dict,
    audit_event_to_dict,
    revision_to_dict,
    workspace_to_dict,
)
from apps.workspaces.selectors import agent_get_active, api_key_list
from apps.workspaces.serializers import (
    AgentCreateIn,
    AgentListOut,
    AgentOut,
    AgentRevisionListOut,
    AgentRevisionOut,
    AgentUpdateIn,
    ApiKeyCreatedOut,
    ApiKeyCreateIn,
    ApiKeyOut,
    AuditEventListOut,
    WorkspaceListOut,
)
from apps.workspaces.services import api_key_create_by_key, api_key_manager_check, api_key_revoke
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


API_KEY_KEYSET = Keyset("api_keys", "created_at", descending=True)
ApiKeyList = list_envelope(ApiKeyOut, "ApiKeyList")
ID_PARAMETER = [OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH)]
_SCOPE_NOTE = (
    " Needs `api_keys:create` and `auth_tokens:create` on a key created by a workspace owner."
)


class ApiKeyViewSet(AgentViewSet):
    required_scopes = {
        "list": "api_keys:create",
        "create": "api_keys:create",
        "revoke": "api_keys:create",
    }
    extension_actions = ("list", "create", "revoke")
    error_statuses = {"create": (404,), "revoke": (404, 409)}
    agent_scope = "workspace"
    openapi_tags = ["API keys"]

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if self.action in self.required_scopes:
            api_key_manager_check(key=self.credential.key)

    @list_operation(
        summary="List integration keys (extension)",
        description="The Agent's API keys, newest first, revoked and expired ones included; "
        "secrets are never shown." + _SCOPE_NOTE,
        parameters=PAGE_PARAMETERS,
        responses={200: ApiKeyList},
    )
    def list(self, request, agent_id: str | None = None):
        return self.paginated(
            api_key_list(agent=self.agent), keyset=API_KEY_KEYSET, render=api_key_to_dict
        )

    @extend_schema(
        summary="Create a narrow integration key (extension)",
        description="A key for one Agent of the workspace whose permissions are a subset of "
        "the calling key's (never `api_keys:create`), optionally expiring. The response "
        "carries the full key in `secret` once; it cannot be retrieved again. Asking for a "
        "permission the calling key lacks is 403 naming it; an unknown one is 400. Revoking "
        "the calling key later leaves this key working." + _SCOPE_NOTE,
        request=ApiKeyCreateIn,
        responses={201: ApiKeyCreatedOut},
    )
    def create(self, request, agent_id: str | None = None):
        body = ApiKeyCreateIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        agent = self.agent
        if "agent_id" in data and data["agent_id"] != agent.pk:
            if agent_id is not None:
                raise BadRequest("agent_id: differs from the Agent in the path; send one.")
            agent = agent_get_active(workspace_id=agent.workspace_id, agent_id=data["agent_id"])
        key, secret = api_key_create_by_key(
            parent=self.credential.key,
            agent=agent,
            name=data["name"],
            scopes=data["scopes"],
            expires_at=data.get("expires_at"),
        )
        return json_response({**api_key_to_dict(key), "secret": secret}, status=201)

    @extend_schema(
        summary="Revoke an integration key (extension)",
        description="Revokes a key of the Agent at once; keys it created keep working. An "
        "already revoked key is 409, and so is the calling key itself (a key never locks itself "
        "out, as with archiving its own Agent)." + _SCOPE_NOTE,
        parameters=ID_PARAMETER,
        request=None,
        responses={200: ApiKeyOut},
    )
    def revoke(self, request, id: str, agent_id: str | None = None):
        require_no_body_fields(request)
        if id == self.credential.key.pk:
            # The same rule as archiving a key's own Agent: a key never locks itself out.
            raise Conflict(
                "A key cannot revoke itself: use another key with api_keys:create, or the console."
            )
        key = api_key_revoke(agent=self.agent, key_id=id, by_user=self.credential.key.created_by)
        return json_response(api_key_to_dict(key))


AUDIT_KEYSET = Keyset("audit_events", "created_at", descending=True)


def _audit_parameter(name: str, description: str, **schema) -> OpenApiParameter:
    return OpenApiParameter(name, {"type": "string", **schema}, description=description)


AUDIT_PARAMETERS = [
    _audit_parameter(
        "action",
        "One action (`api_key.revoked`), or a group: the part before the dot (`api_key`) "
        "keeps every action of it.",
    ),
    _audit_parameter("actor_type", "Who acted.", enum=list(ActorType.values)),
    _audit_parameter(
        "actor_id", "One actor: a user's email address, a key's id, an application's key id."
    ),
    _audit_parameter("target_id", "Everything that happened to one thing (a key, a document)."),
    _audit_parameter("agent_id", "Only entries about this Agent."),
    _audit_parameter(
        "since",
        "Entries at or after this ISO 8601 date-time (with its zone) or date (UTC).",
        format="date-time",
    ),
    _audit_parameter(
        "until",
        "Entries before this date-time; a date keeps that whole day (UTC).",
        format="date-time",
    ),
]


class AuditEventViewSet(AgentViewSet):
    """GET /v1/audit_events: the workspace's audit log (docs/audit-log.md)."""

    required_scopes = {"list": "audit_log:read"}
    extension_actions = ("list",)
    openapi_tags = ["Audit log"]

    @list_operation(
        summary="List audit events (extension)",
        description="Every change made to the key's workspace, newest first: who (a person, "
        "an API key, a connected application or the system), when, from which address, what "
        "and which fields changed, before and after. Never a secret. An unknown action or a "
        "malformed time is 400.",
        parameters=[*AUDIT_PARAMETERS, *PAGE_PARAMETERS],
        responses={200: AuditEventListOut},
    )
    def list(self, request):
        filters = selectors.audit_filters_parse(request.query_params)
        queryset = selectors.audit_event_list(workspace_id=self.agent.workspace_id, filters=filters)
        return self.paginated(queryset, keyset=AUDIT_KEYSET, render=audit_event_to_dict)


# --- /v1/connection: the current credential ------------------------------------------------


ConnectionOut = inline_serializer(
    "Connection",
    {
        "object": serializers.ChoiceField(choices=["connection"]),
        "credential": inline_serializer(
            "ConnectionCredential",
            {
                "kind": serializers.ChoiceField(
                    choices=["api_key", "browser_token", "resource_token"]
                ),
                "id": serializers.CharField(),
                "name": serializers.CharField(allow_null=True),
                "prefix": serializers.CharField(),
                "created_at": serializers.DateTimeField(),
                "last_used_at": serializers.DateTimeField(allow_null=True),
                "expires_at": serializers.DateTimeField(allow_null=True),
                "user_id": serializers.CharField(
                    allow_null=True, help_text="The end user a browser token is bound to."
                ),
            },
        ),
        "agent": inline_serializer(
            "ConnectionAgent", {"id": serializers.CharField(), "name": serializers.CharField()}
        ),
        "workspace": inline_serializer(
            "ConnectionWorkspace", {"id": serializers.CharField(), "name": serializers.CharField()}
        ),
        "scopes": serializers.ListField(child=serializers.CharField()),
        "is_owner": serializers.BooleanField(),
    },
)


def credential_to_dict(credential: KeyCredential) -> dict:
    """The credential part of /v1/connection: public identifiers only, never a secret."""
    key, token, resource_token = credential.key, credential.token, credential.resource_token
    if resource_token is not None:
        return {
            "kind": credential.kind,
            "id": resource_token.public_id,
            "name": key.name,
            "prefix": resource_token.public_id,
            "created_at": iso(resource_token.issued_at),
            "last_used_at": None,
            "expires_at": iso(resource_token.expires_at),
            "user_id": None,
        }
    if token is not None:
        return {
            "kind": credential.kind,
            "id": token.public_id,
            "name": None,
            "prefix": token.public_id,
            "created_at": iso(token.issued_at),
            "last_used_at": None,
            "expires_at": iso(token.expires_at),
            "user_id": token.user_id,
        }
    return {
        "kind": credential.kind,
        "id": key.pk,
        "name": key.name,
        "prefix": key.prefix,
        "created_at": iso(key.created_at),
        "last_used_at": iso(key.last_used_at),
        "expires_at": iso(key.expires_at),
        "user_id": None,
    }


class ConnectionViewSet(AgentViewSet):
    required_scopes = {"retrieve": None}
    credential_kinds = ("api_key", "browser_token")

    @extend_schema(
        tags=["Connection"],
        summary="Describe the current credential",
        description="The credential's kind (`api_key`, `browser_token`, or `resource_token` "
        "for the Agents MCP server's resource-bound tokens, an extension), public prefix, "
        "expiry, Agent, workspace, scopes and whether it acts for a workspace owner. Needs no "
        "scope; never exposes a secret. A browser token reports its end user in `user_id`.",
        responses={200: ConnectionOut},
    )
    def retrieve(self, request, agent_id: str | None = None):
        credential = self.credential
        agent = self.agent
        return json_response(
            {
                "object": "connection",
                "credential": credential_to_dict(credential),
                "agent": {"id": agent.pk, "name": agent.name},
                "workspace": {"id": agent.workspace_id, "name": agent.workspace.name},
                "scopes": sorted(credential.scopes),
                "is_owner": credential.is_owner(),
            }
        )
