"""/v1 users, conversations, messages and runs (contract 4.1), and POST /v1/ingest.

Thin: parse the query, call a selector or the recording service, render with plain functions.
"""

from typing import Any, cast

from django.conf import settings
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
)

from apps.activity import analytics, otlp, selectors, word_search
from apps.activity import events as activity_events
from apps.activity.records import RECORD_SERIALIZERS, records_parse
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
    AuthTokenCreateIn,
    AuthTokenOut,
    ConversationOut,
    IngestResultOut,
    MessageOut,
    RunAttributesOut,
    RunOut,
    StepOut,
    UserOut,
)
from apps.activity.services import activity_record, auth_token_create
from apps.activity.tracing import spans_record
from apps.api.authentication import ApiKeyAuthentication, ServiceAgentKeyAuthentication
from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.parsing import IngestJsonParser
from apps.api.serializers import list_envelope
from apps.api.views import json_response
from apps.common.errors import PayloadTooLarge
from apps.workspaces.browser_tokens import DEFAULT_LIFETIME_SECONDS
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


_ANALYTICS_PARAMETERS = [
    OpenApiParameter("from", OpenApiTypes.DATE, description="First UTC day (default: 29 days "
                     "before `to`)."),
    OpenApiParameter("to", OpenApiTypes.DATE, description="Last UTC day (default: today); at "
                     "most 366 days in all."),
    OpenApiParameter("by_day", OpenApiTypes.BOOL, description="Also each day's figures."),
]  # fmt: skip


class AnalyticsViewSet(AgentViewSet):
    """GET /v1/analytics/steps and /v1/analytics/runs: figures per tool, model, step name,
    environment or release, from the rollup the recording keeps (apps.activity.analytics)."""

    required_scopes = {"steps": "runs:read", "runs": "runs:read"}
    extension_actions = ("steps", "runs")
    openapi_tags = ["Analytics"]

    def _answer(self, request, *, groups: tuple[str, ...], subject: str):
        query = analytics.query_parse(
            request.query_params, groups=groups, today=timezone.now().date()
        )
        rows = analytics.rollup_read(
            agent_id=self.agent.pk,
            group=query.group,
            first_day=query.first_day,
            last_day=query.last_day,
            by_day=query.by_day,
        )
        return json_response(
            {
                "object": f"{subject}_analytics",
                "group": query.group,
                "from": query.first_day.isoformat(),
                "to": query.last_day.isoformat(),
                "data": [analytics.figures_to_dict(row, by_day=query.by_day) for row in rows],
            }
        )

    @extend_schema(
        summary="Step analytics (extension)",
        description="Per tool, model or step name (`group`) over a period of UTC days: how "
        "many steps, how many failed and the error rate, p50/p95/p99 duration (from a "
        "histogram: within 4.5 %) and tokens, most steps first; `by_day` adds each day's. "
        "Read from a daily rollup the recording keeps exact, never from the steps.",
        parameters=[
            OpenApiParameter("group", OpenApiTypes.STR, enum=list(analytics.STEP_GROUPS)),
            *_ANALYTICS_PARAMETERS,
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def steps(self, request, agent_id: str | None = None):
        return self._answer(request, groups=analytics.STEP_GROUPS, subject="step")

    @extend_schema(
        summary="Run analytics (extension)",
        description='Per environment or release (`group`; runs without one under ""): the '
        "same figures as step analytics, latency being the run's turn latency.",
        parameters=[
            OpenApiParameter("group", OpenApiTypes.STR, enum=list(analytics.RUN_GROUPS)),
            *_ANALYTICS_PARAMETERS,
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def runs(self, request, agent_id: str | None = None):
        return self._answer(request, groups=analytics.RUN_GROUPS, subject="run")


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


IngestRecord = PolymorphicProxySerializer(
    component_name="IngestRecord",
    # Activity's own kinds, and those other apps registered (ready() ran before URLs load).
    serializers=[*RECORD_SERIALIZERS.values(), *activity_events.ingest_kind_schemas()],
    resource_type_field_name="type",
    many=True,
)

_INGEST_EXAMPLE: list[dict[str, Any]] = [
    {
        "type": "user",
        "id": "usr_01JD0000000000000000000001",
        "external_id": "customer-42",
        "identity_type": "user",
        "display_name": "Ada Lovelace",
        "email": "ada@example.com",
        "last_seen_at": "2025-01-31T12:00:00Z",
    },
    {
        "type": "conversation",
        "id": "conv_01JD0000000000000000000001",
        "user_id": "usr_01JD0000000000000000000001",
        "title": "Refund for order 1042",
        "source": "embed",
        "status": "streaming",
        "created_at": "2025-01-31T12:00:00Z",
    },
    {
        "type": "message",
        "id": "msg_01JD0000000000000000000001",
        "conversation_id": "conv_01JD0000000000000000000001",
        "role": "user",
        "parts": [{"type": "text", "text": "Where is my refund?"}],
        "created_at": "2025-01-31T12:00:01Z",
    },
    {
        "type": "run",
        "id": "run_01JD0000000000000000000001",
        "conversation_id": "conv_01JD0000000000000000000001",
        "request_id": "req_8f2c",
        "status": "completed",
        "model_id": "gpt-4.1-mini",
        "sdk_version": "5.0.12",
        "protocol_version": 1,
        "input_tokens": 1830,
        "output_tokens": 212,
        "total_tokens": 2042,
        "credits_charged": 0.42,
        "tool_names": ["lookup_order"],
        "created_at": "2025-01-31T12:00:01Z",
        "completed_at": "2025-01-31T12:00:04Z",
        "total_turn_latency_ms": 2870,
    },
]


class IngestViewSet(AgentViewSet):
    required_scopes = {"create": "activity:write"}
    extension_actions = ("create",)
    error_statuses = {"create": (413,)}
    openapi_tags = ["Ingest"]
    parser_classes = [IngestJsonParser]

    @extend_schema(
        summary="Record activity (extension)",
        description=(
            "The Agent runtime records what it observes: a JSON array (1 to 1000) of records, "
            "each the contract's resource fields (minus `object`) plus `type`. Records are "
            "upserted by `id` (users also by `external_id`) in order, in one transaction: an "
            "invalid record is a 400 naming `records[i].field` and nothing is kept. A run "
            "moves from `streaming` to `completed`, `failed` or `aborted` once; an ended run "
            "cannot change status again (400). See docs/activity-recording.md."
        ),
        request=IngestRecord,
        responses={200: IngestResultOut},
        examples=[
            OpenApiExample(f"A {record['type']} record", record, request_only=True)
            for record in _INGEST_EXAMPLE
        ],
    )
    def create(self, request, agent_id: str | None = None):
        records = records_parse(request.data)
        result = activity_record(agent=self.agent, records=records)
        return json_response(result.as_dict())


def _raw_body(request, *, limit: int) -> bytes:
    """The request body, at most `limit` bytes. A chunked one (OpenTelemetry's Node exporter
    always sends them) arrives decoded and sized (apps.api.middleware.HttpEdgesMiddleware)."""
    body = request.read(limit + 1)
    if len(body) > limit:
        raise PayloadTooLarge(f"The body is larger than {limit} bytes.")
    return body


class OtlpTracesViewSet(AgentViewSet):
    """OTLP/HTTP traces: `OTEL_EXPORTER_OTLP_ENDPOINT=<base>/v1/otlp` and the exporter's own
    `/v1/traces` lands here. The body is read raw (no DRF parser): its Content-Type picks the
    OTLP encoding."""

    required_scopes = {"create": "activity:write"}
    extension_actions = ("create",)
    error_statuses = {"create": (413, 415)}
    openapi_tags = ["Ingest"]
    parser_classes: list = []

    @extend_schema(
        summary="Record OpenTelemetry traces (OTLP/HTTP, extension)",
        description=(
            "An OTLP/HTTP traces endpoint: `ExportTraceServiceRequest` as binary protobuf "
            "(`application/x-protobuf`) or OTLP/JSON (`application/json`), optionally "
            "`Content-Encoding: gzip`; the answer is an `ExportTraceServiceResponse` in the same "
            "encoding. Each trace becomes a run (id = the trace id) and each span a step (id = "
            "the span id), mapped from the GenAI semantic conventions (`gen_ai.*`) and the AI "
            "SDK's telemetry (`ai.*`). Spans that cannot be recorded are counted in "
            "`partialSuccess.rejectedSpans` with a reason; the others are kept. At most 10,000 "
            "spans per request. Set OTEL_EXPORTER_OTLP_ENDPOINT to `{base_url}/otlp` and "
            "OTEL_EXPORTER_OTLP_HEADERS to `Authorization=Bearer <API_KEY>` (a key with "
            "`activity:write`). See docs/activity-recording.md."
        ),
        request={otlp.PROTOBUF: OpenApiTypes.BINARY, otlp.JSON: OpenApiTypes.OBJECT},
        responses={200: OpenApiTypes.OBJECT},
    )
    def handle_exception(self, exc):
        # Every failure, authentication and rate limits included, as OTLP/HTTP answers it.
        response = super().handle_exception(exc)
        return otlp.error_as_status(response, content_type=self.request.content_type)

    def create(self, request, agent_id: str | None = None):
        kind = otlp.content_kind(request.content_type)
        limit = settings.API_MAX_INGEST_BODY_BYTES
        raw = _raw_body(request._request, limit=limit)
        body = otlp.body_inflate(raw, encoding=request.headers.get("Content-Encoding"), limit=limit)
        with otlp.IN_FLIGHT.admit(len(body), limit=settings.OTLP_BYTES_IN_FLIGHT):
            decoded = otlp.request_decode(body, kind=kind)
            result = spans_record(agent=self.agent, spans=decoded.spans)
        rejected = decoded.rejected + result.rejected
        message = " ".join([*decoded.errors, *result.errors][:5])
        content, content_type = otlp.response_body(kind=kind, rejected=rejected, message=message)
        return HttpResponse(content, status=200, content_type=content_type)
