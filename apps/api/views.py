"""The base every /v1 view stands on, and the platform's own operations."""

from collections.abc import Callable
from typing import Any, cast

import orjson
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.response import Response
from rest_framework.viewsets import ViewSet

from apps.common.errors import NotFound
from apps.common.keyset import Keyset, page_request, paginate
from apps.common.time import iso
from apps.workspaces.models import Agent, ApiKey
from apps.workspaces.selectors import is_workspace_owner


class AgentViewSet(ViewSet):
    """A viewset whose every request is scoped to one Agent.

    `required_scopes` maps each action to the permission it needs. The Agent is the key's own,
    or, on `/v1/agents/{agentId}/...`, the one named there: another Agent is `not_found`.
    Views with `agent_scope = "workspace"` (webhooks) accept any active Agent of the key's
    workspace.
    """

    required_scopes: dict[str, str | None] = {}
    agent_scope = "key"
    agent: Agent

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        # No stored id contains NUL (PostgreSQL text cannot hold it): such a path names
        # nothing, and must not reach the database as a query.
        if any("\x00" in value for value in kwargs.values() if isinstance(value, str)):
            raise NotFound()
        self.agent = self.resolve_agent(kwargs.get("agent_id"))

    def resolve_agent(self, agent_id: str | None) -> Agent:
        key_agent = cast(ApiKey, self.request.auth).agent
        if agent_id is None or agent_id == key_agent.pk:
            return key_agent
        if self.agent_scope == "workspace":
            agent = Agent.objects.filter(
                pk=agent_id, workspace_id=key_agent.workspace_id, status=Agent.Status.ACTIVE
            ).first()
            if agent is not None:
                return agent
        raise NotFound("No such Agent for this API key.")

    def paginated(self, queryset, *, keyset: Keyset, render: Callable[[Any], dict]) -> HttpResponse:
        """One keyset page of `queryset` in the list envelope, `limit`/`after` from the query."""
        page = paginate(queryset, keyset=keyset, page=page_request(self.request.query_params))
        return json_response(page.envelope(render))


def json_response(data, *, status: int = 200) -> HttpResponse:
    """Plain-function output path: no serializer, straight to orjson."""
    return HttpResponse(orjson.dumps(data), status=status, content_type="application/json")


ConnectionOut = inline_serializer(
    "Connection",
    {
        "object": serializers.ChoiceField(choices=["connection"]),
        "credential": inline_serializer(
            "ConnectionCredential",
            {
                "kind": serializers.ChoiceField(choices=["api_key"]),
                "id": serializers.CharField(),
                "name": serializers.CharField(),
                "prefix": serializers.CharField(),
                "created_at": serializers.DateTimeField(),
                "last_used_at": serializers.DateTimeField(allow_null=True),
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


class ConnectionViewSet(AgentViewSet):
    required_scopes = {"retrieve": None}

    @extend_schema(
        tags=["Connection"],
        summary="Describe the current credential",
        description="The key's kind, public prefix, Agent, workspace, scopes and whether its "
        "creator is a workspace owner. Needs no scope; never exposes the secret.",
        responses={200: ConnectionOut},
    )
    def retrieve(self, request, agent_id: str | None = None):
        key = request.auth
        agent = self.agent
        return json_response(
            {
                "object": "connection",
                "credential": {
                    "kind": "api_key",
                    "id": key.pk,
                    "name": key.name,
                    "prefix": key.prefix,
                    "created_at": iso(key.created_at),
                    "last_used_at": iso(key.last_used_at),
                },
                "agent": {"id": agent.pk, "name": agent.name},
                "workspace": {"id": agent.workspace_id, "name": agent.workspace.name},
                "scopes": sorted(key.scopes),
                "is_owner": is_workspace_owner(
                    user_id=key.created_by_id, workspace_id=agent.workspace_id
                ),
            }
        )


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
@authentication_classes([])
@permission_classes([])
def unknown_path(request, rest: str = "") -> Response:
    raise NotFound(f"No operation at {request.path}.")
