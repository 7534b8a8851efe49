"""/v1/api_keys: integration keys a workspace owner's key lists, mints narrower and revokes
(extensions; docs/keys-and-tokens.md). Thin: check the caller may manage keys, call a service,
render plainly.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.serializers import list_envelope
from apps.api.views import json_response, require_no_body_fields
from apps.common.errors import BadRequest, Conflict
from apps.common.keyset import Keyset
from apps.workspaces.rendering import api_key_to_dict
from apps.workspaces.selectors import agent_get_active, api_key_list
from apps.workspaces.serializers import ApiKeyCreatedOut, ApiKeyCreateIn, ApiKeyOut
from apps.workspaces.services import api_key_create_by_key, api_key_manager_check, api_key_revoke
from apps.workspaces.viewsets import AgentViewSet

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
