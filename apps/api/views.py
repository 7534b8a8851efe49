"""The base every /v1 view stands on, and the platform's own operations."""

from collections.abc import Callable
from typing import Any, cast

import orjson
from django.db import connection
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.response import Response
from rest_framework.viewsets import ViewSet

from apps.api.credentials import Credential
from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset, page_request, paginate
from apps.common.listing import ListQuery, compiled_list
from apps.common.shapes import Shape
from apps.common.time import iso
from apps.workspaces.models import Agent


class AgentViewSet(ViewSet):
    """A viewset whose every request is scoped to one Agent.

    `required_scopes` maps each action to the permission it needs. The Agent is the key's own,
    or, on `/v1/agents/{agentId}/...`, the one named there: another Agent is `not_found`.
    Views with `agent_scope = "workspace"` (webhooks) accept any active Agent of the key's
    workspace.
    """

    required_scopes: dict[str, str | None] = {}
    # Which kinds of credential (apps.api.credentials) the view serves; others are 403.
    credential_kinds: tuple[str, ...] = ("api_key",)
    agent_scope = "key"
    agent: Agent

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        # No stored id contains NUL (PostgreSQL text cannot hold it): such a path names
        # nothing, and must not reach the database as a query.
        if any("\x00" in value for value in kwargs.values() if isinstance(value, str)):
            raise NotFound()
        # A parameter given twice has no meaning here (none is a list): refuse it rather than
        # silently take one of the values.
        for name, values in request._request.GET.lists():
            if len(values) > 1:
                raise BadRequest(f"{name}: given {len(values)} times; send it once.")
        self.agent = self.resolve_agent(kwargs.get("agent_id"))

    def check_permissions(self, request) -> None:
        # The rate limit counts before the scope check (DRF counts after it): a request the key
        # may not make still costs a request, and its 403 carries the RateLimit headers like
        # every other answer to an authenticated request.
        super().check_throttles(request)
        super().check_permissions(request)

    def check_throttles(self, request) -> None:
        """Done first thing in `check_permissions`."""

    def resolve_agent(self, agent_id: str | None) -> Agent:
        key_agent = self.credential.agent
        if agent_id is None or agent_id == key_agent.pk:
            return key_agent
        if self.agent_scope == "workspace":
            agent = Agent.objects.filter(
                pk=agent_id, workspace_id=key_agent.workspace_id, status=Agent.Status.ACTIVE
            ).first()
            if agent is not None:
                return agent
        raise NotFound("No such Agent for this API key.")

    @property
    def credential(self) -> Credential:
        return cast(Credential, self.request.auth)

    def paginated(self, queryset, *, keyset: Keyset, render: Callable[[Any], dict]) -> HttpResponse:
        """One keyset page of `queryset` in the list envelope, `limit`/`after` from the query."""
        page = paginate(queryset, keyset=keyset, page=page_request(self.request.query_params))
        return json_response(page.envelope(render))

    def paginated_shape(self, query: ListQuery, *, keyset: Keyset, shape: Shape) -> HttpResponse:
        """`paginated` for a contract object: on PostgreSQL through SQL compiled once per shape
        of query, its rows straight into the output (apps.common.listing), elsewhere through
        the ORM and the models."""
        wanted = page_request(self.request.query_params)
        if connection.vendor != "postgresql":
            page = paginate(query.queryset(), keyset=keyset, page=wanted)
            query.check_empty_page(page.rows)
            return json_response(page.envelope(shape.from_model))
        page = compiled_list(query.model, shape, keyset).page(query, wanted)
        query.check_empty_page(page.rows)
        return json_response(page.envelope(shape.from_row))


def require_no_body_fields(request) -> None:
    """For operations that take no body: none, or an empty JSON object. Anything else is 400,
    as an unknown field is for every strict body."""
    raw = request._request
    if not raw.body.strip():
        return
    if raw.content_type == "multipart/form-data" and not raw.POST and not raw.FILES:
        return  # an empty form: what some clients send for "no body"
    data = request.data
    if not isinstance(data, dict):
        raise BadRequest("This operation takes no body; send none, or {}.")
    if data:
        raise BadRequest(
            f"This operation takes no body fields; unknown: {', '.join(sorted(map(str, data)))}."
        )


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


def credential_to_dict(credential: Credential) -> dict:
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


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
@authentication_classes([])
@permission_classes([])
def unknown_path(request, rest: str = "") -> Response:
    raise NotFound(f"No operation at {request.path}.")
