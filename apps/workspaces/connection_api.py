"""GET /v1/connection: what authenticated the request (an API key, a browser token or a
resource-bound token), with its Agent, workspace and scopes; never a secret.
"""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from apps.api.views import json_response
from apps.common.time import iso
from apps.workspaces.credentials import KeyCredential
from apps.workspaces.viewsets import AgentViewSet

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
