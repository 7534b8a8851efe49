"""/v1 users, conversations, messages and runs (contract 4.1): the reads.

Thin: parse the query, call a selector, render with plain functions. The rest of activity's /v1
is beside it: `analytics_api` (step and run analytics), `browser_token_api` (browser tokens and
/v1/me), `ingest_api` (POST /v1/ingest and OTLP traces), `search_api` (word search).
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.activity import selectors, word_search
from apps.activity.rendering import (
    CONVERSATION,
    MESSAGE,
    RUN,
    USER,
    conversation_to_dict,
    run_attributes_to_dict,
    run_to_dict,
    step_to_dict,
    user_to_dict,
)
from apps.activity.search_api import q_parameter, ranked_list
from apps.activity.serializers import (
    ConversationOut,
    MessageOut,
    RunAttributesOut,
    RunOut,
    StepOut,
    UserOut,
)
from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.serializers import list_envelope
from apps.api.views import json_response
from apps.workspaces.viewsets import AgentViewSet

UserList = list_envelope(UserOut, "UserList")
ConversationList = list_envelope(ConversationOut, "ConversationList")
MessageList = list_envelope(MessageOut, "MessageList")
RunList = list_envelope(RunOut, "RunList")
StepList = list_envelope(StepOut, "RunStepList")

ID_PARAMETER = [OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH)]


def _filter_parameters(filters) -> list[OpenApiParameter]:
    types = {"datetime": OpenApiTypes.DATETIME}
    return [
        OpenApiParameter(
            spec.name,
            types.get(spec.kind, OpenApiTypes.STR),
            description=spec.description + " (extension)",
            enum=list(spec.choices) or None,
        )
        for spec in filters
    ]


class UserViewSet(AgentViewSet):
    required_scopes = {"list": "users:read", "retrieve": "users:read"}
    error_statuses = {"retrieve": (404,)}
    openapi_tags = ["Users"]

    @list_operation(
        summary="List users",
        description="Users observed by the Agent, most recently seen first.",
        parameters=PAGE_PARAMETERS + _filter_parameters(selectors.USER_FILTERS),
        responses={200: UserList},
    )
    def list(self, request, agent_id: str | None = None):
        filters = selectors.filters_parse(request.query_params, selectors.USER_FILTERS)
        query = selectors.user_query(agent=self.agent, filters=filters)
        return self.paginated_shape(query, keyset=selectors.USER_KEYSET, shape=USER)

    @extend_schema(summary="Retrieve a user", parameters=ID_PARAMETER, responses={200: UserOut})
    def retrieve(self, request, id: str, agent_id: str | None = None):
        return json_response(user_to_dict(selectors.user_get(agent=self.agent, user_id=id)))


class ConversationViewSet(AgentViewSet):
    required_scopes = {
        "list": "conversations:read",
        "retrieve": "conversations:read",
        "messages": "conversations:read",
    }
    error_statuses = {"retrieve": (404,), "messages": (404,)}
    openapi_tags = ["Conversations"]

    @list_operation(
        summary="List conversations",
        description="Conversation metadata, most recently updated first; message content "
        "comes from the messages operation.",
        parameters=PAGE_PARAMETERS
        + _filter_parameters(selectors.CONVERSATION_FILTERS)
        + [q_parameter("messages; a conversation ranks by its best message")],
        responses={200: ConversationList},
    )
    def list(self, request, agent_id: str | None = None):
        filters = selectors.filters_parse(request.query_params, selectors.CONVERSATION_FILTERS)
        query = selectors.conversation_query(agent=self.agent, filters=filters)
        text = word_search.query_parse(request.query_params)
        if text is not None:
            return ranked_list(request, agent=self.agent, text=text, subject="conversations",
                               query=query, shape=CONVERSATION, filtered=bool(filters))  # fmt: skip
        return self.paginated_shape(query, keyset=selectors.CONVERSATION_KEYSET, shape=CONVERSATION)

    @extend_schema(
        summary="Retrieve a conversation", parameters=ID_PARAMETER, responses={200: ConversationOut}
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        conversation = selectors.conversation_get(agent=self.agent, conversation_id=id)
        return json_response(conversation_to_dict(conversation))

    @list_operation(
        summary="List a conversation's messages",
        description="Messages of a conversation of the Agent, oldest first.",
        parameters=ID_PARAMETER + PAGE_PARAMETERS,
        responses={200: MessageList},
    )
    def messages(self, request, id: str, agent_id: str | None = None):
        query = selectors.message_query(agent=self.agent, conversation_id=id)
        return self.paginated_shape(query, keyset=selectors.MESSAGE_KEYSET, shape=MESSAGE)


class RunViewSet(AgentViewSet):
    required_scopes = {
        "list": "runs:read",
        "retrieve": "runs:read",
        "steps": "runs:read",
        "attributes": "runs:read",
    }
    error_statuses = {"retrieve": (404,), "steps": (404,), "attributes": (404,)}
    extension_actions = ("steps", "attributes")
    openapi_tags = ["Runs"]

    @list_operation(
        summary="List runs",
        description="Model runs of the Agent, newest first.",
        parameters=PAGE_PARAMETERS
        + _filter_parameters(selectors.RUN_FILTERS)
        + [q_parameter("steps (input, output, error, query); a run ranks by its best step")],
        responses={200: RunList},
    )
    def list(self, request, agent_id: str | None = None):
        filters = selectors.filters_parse(request.query_params, selectors.RUN_FILTERS)
        query = selectors.run_query(agent=self.agent, filters=filters)
        text = word_search.query_parse(request.query_params)
        if text is not None:
            return ranked_list(request, agent=self.agent, text=text, subject="runs",
                               query=query, shape=RUN, filtered=bool(filters))  # fmt: skip
        return self.paginated_shape(query, keyset=selectors.RUN_KEYSET, shape=RUN)

    @extend_schema(summary="Retrieve a run", parameters=ID_PARAMETER, responses={200: RunOut})
    def retrieve(self, request, id: str, agent_id: str | None = None):
        return json_response(run_to_dict(selectors.run_get(agent=self.agent, run_id=id)))

    @extend_schema(
        summary="Retrieve a run's attributes (extension)",
        description="The run's dimensions: `environment`, `release`, `tags` and `metadata`, "
        "recorded from POST /v1/ingest run records or mapped from OpenTelemetry resource and "
        'telemetry metadata attributes (docs/activity-recording.md, "Dimensions"). Each is '
        "also a filter of GET /v1/runs and GET /v1/conversations.",
        parameters=ID_PARAMETER,
        responses={200: RunAttributesOut},
    )
    def attributes(self, request, id: str, agent_id: str | None = None):
        return json_response(run_attributes_to_dict(selectors.run_get(agent=self.agent, run_id=id)))

    @list_operation(
        summary="List a run's steps (extension)",
        description="The steps of a run (its trace: model calls, tool calls, retrievals, "
        "custom spans), first started first; `parent_id` builds the tree. Recorded through "
        "POST /v1/ingest (`type: step`) or OpenTelemetry (POST /v1/otlp/v1/traces). Large "
        "inputs, outputs and attributes are shortened and named in `truncated`. See "
        "docs/activity-recording.md.",
        parameters=ID_PARAMETER + PAGE_PARAMETERS,
        responses={200: StepList},
    )
    def steps(self, request, id: str, agent_id: str | None = None):
        steps = selectors.step_list(agent=self.agent, run_id=id)
        return self.paginated(steps, keyset=selectors.STEP_KEYSET, render=step_to_dict)
