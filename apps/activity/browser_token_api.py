"""Browser tokens (extension): POST /v1/auth_tokens mints one for an end user, and /v1/me/...
is where that end user reads their own conversations."""

from typing import cast

from drf_spectacular.utils import extend_schema

from apps.activity import selectors
from apps.activity.api import ID_PARAMETER, ConversationList, MessageList
from apps.activity.rendering import CONVERSATION, MESSAGE
from apps.activity.serializers import AuthTokenCreateIn, AuthTokenOut
from apps.activity.services import auth_token_create
from apps.api.authentication import ApiKeyAuthentication, ServiceAgentKeyAuthentication
from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.views import json_response
from apps.workspaces.browser_tokens import DEFAULT_LIFETIME_SECONDS
from apps.workspaces.viewsets import AgentViewSet


class AuthTokenViewSet(AgentViewSet):
    """POST /v1/auth_tokens: a server mints a browser token for one of its end users.

    Server-side only: it takes an API key, so it sends no CORS headers.
    """

    required_scopes = {"create": "auth_tokens:create"}
    extension_actions = ("create",)
    openapi_tags = ["Browser tokens"]
    authentication_classes = [ServiceAgentKeyAuthentication, ApiKeyAuthentication]

    @extend_schema(
        summary="Mint a browser token for an end user (extension)",
        description=(
            "Authenticated by an API key in `X-Service-Agent-Key` (or `Authorization: Bearer`). "
            "Upserts the end user by `external_id` as an identified user (`identity_type` = "
            "`user`) and returns a signed token bound to the Agent and that user, valid "
            "`expires_in` seconds (default 3600, 60 to 86400, never past the API key's own "
            "expiry). The token is safe in browser code: it only reads that user's own "
            "conversations on `/v1/me/...`, from the Agent's allowed origins. Revoking the API "
            "key invalidates its tokens at once. See docs/keys-and-tokens.md."
        ),
        request=AuthTokenCreateIn,
        responses={201: AuthTokenOut},
    )
    def create(self, request, agent_id: str | None = None):
        body = AuthTokenCreateIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        token = auth_token_create(
            key=self.credential.key,
            external_id=data["external_id"],
            profile={name: data[name] for name in ("display_name", "email") if name in data},
            lifetime_seconds=data.get("expires_in", DEFAULT_LIFETIME_SECONDS),
        )
        return json_response(token.as_dict(), status=201)


class MeConversationViewSet(AgentViewSet):
    """/v1/me/...: the end user of a browser token reads their own conversations."""

    required_scopes = {"list": "conversations:read", "messages": "conversations:read"}
    credential_kinds = ("browser_token",)
    extension_actions = ("list", "messages")
    error_statuses = {"messages": (404,)}
    openapi_tags = ["Browser tokens"]

    @property
    def end_user_id(self) -> str:
        return cast(str, self.credential.end_user_id)

    @list_operation(
        summary="List my conversations (browser token, extension)",
        description="The conversations of the browser token's end user, most recently "
        "updated first. Browser tokens only (an API key is 403); CORS for the Agent's "
        "allowed origins.",
        parameters=PAGE_PARAMETERS,
        responses={200: ConversationList},
    )
    def list(self, request):
        query = selectors.conversation_query(
            agent=self.agent, filters={"user_id": self.end_user_id}
        )
        return self.paginated_shape(query, keyset=selectors.CONVERSATION_KEYSET, shape=CONVERSATION)

    @list_operation(
        summary="List my conversation's messages (browser token, extension)",
        description="Messages of one of the token's end user's conversations, oldest first; "
        "another user's conversation is 404.",
        parameters=ID_PARAMETER + PAGE_PARAMETERS,
        responses={200: MessageList},
    )
    def messages(self, request, id: str):
        query = selectors.message_query(
            agent=self.agent, conversation_id=id, user_id=self.end_user_id
        )
        return self.paginated_shape(query, keyset=selectors.MESSAGE_KEYSET, shape=MESSAGE)
