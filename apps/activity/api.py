"""/v1 users, conversations, messages and runs (contract 4.1), and POST /v1/ingest.

Thin: parse the query, call a selector or the recording service, render with plain functions.
"""

from typing import Any, cast

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
)

from apps.activity import events as activity_events
from apps.activity import otlp, selectors
from apps.activity.rendering import (
    CONVERSATION,
    MESSAGE,
    RUN,
    USER,
    conversation_to_dict,
    run_to_dict,
    step_to_dict,
    user_to_dict,
)
from apps.activity.serializers import (
    RECORD_SERIALIZERS,
    AuthTokenCreateIn,
    AuthTokenOut,
    ConversationOut,
    IngestResultOut,
    MessageOut,
    RunOut,
    StepOut,
    UserOut,
    records_parse,
)
from apps.activity.services import activity_record, auth_token_create
from apps.activity.tracing import spans_record
from apps.api.authentication import ApiKeyAuthentication, ServiceAgentKeyAuthentication
from apps.api.pagination import PAGE_PARAMETERS
from apps.api.parsing import IngestJsonParser
from apps.api.serializers import list_envelope
from apps.api.views import json_response
from apps.common.errors import BadRequest, PayloadTooLarge
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

    @extend_schema(
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

    @extend_schema(
        summary="List conversations",
        description="Conversation metadata, most recently updated first; message content "
        "comes from the messages operation.",
        parameters=PAGE_PARAMETERS + _filter_parameters(selectors.CONVERSATION_FILTERS),
        responses={200: ConversationList},
    )
    def list(self, request, agent_id: str | None = None):
        filters = selectors.filters_parse(request.query_params, selectors.CONVERSATION_FILTERS)
        query = selectors.conversation_query(agent=self.agent, filters=filters)
        return self.paginated_shape(query, keyset=selectors.CONVERSATION_KEYSET, shape=CONVERSATION)

    @extend_schema(
        summary="Retrieve a conversation", parameters=ID_PARAMETER, responses={200: ConversationOut}
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        conversation = selectors.conversation_get(agent=self.agent, conversation_id=id)
        return json_response(conversation_to_dict(conversation))

    @extend_schema(
        summary="List a conversation's messages",
        description="Messages of a conversation of the Agent, oldest first.",
        parameters=ID_PARAMETER + PAGE_PARAMETERS,
        responses={200: MessageList},
    )
    def messages(self, request, id: str, agent_id: str | None = None):
        query = selectors.message_query(agent=self.agent, conversation_id=id)
        return self.paginated_shape(query, keyset=selectors.MESSAGE_KEYSET, shape=MESSAGE)


class RunViewSet(AgentViewSet):
    required_scopes = {"list": "runs:read", "retrieve": "runs:read", "steps": "runs:read"}
    error_statuses = {"retrieve": (404,), "steps": (404,)}
    extension_actions = ("steps",)
    openapi_tags = ["Runs"]

    @extend_schema(
        summary="List runs",
        description="Model runs of the Agent, newest first.",
        parameters=PAGE_PARAMETERS + _filter_parameters(selectors.RUN_FILTERS),
        responses={200: RunList},
    )
    def list(self, request, agent_id: str | None = None):
        filters = selectors.filters_parse(request.query_params, selectors.RUN_FILTERS)
        query = selectors.run_query(agent=self.agent, filters=filters)
        return self.paginated_shape(query, keyset=selectors.RUN_KEYSET, shape=RUN)

    @extend_schema(summary="Retrieve a run", parameters=ID_PARAMETER, responses={200: RunOut})
    def retrieve(self, request, id: str, agent_id: str | None = None):
        return json_response(run_to_dict(selectors.run_get(agent=self.agent, run_id=id)))

    @extend_schema(
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

    @extend_schema(
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

    @extend_schema(
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
    """The request body, at most `limit` bytes, chunked or not.

    OpenTelemetry's Node exporter sends `Transfer-Encoding: chunked`, which Django reads as an
    empty body (it trusts Content-Length only). gunicorn decodes chunks itself and says so
    (`wsgi.input_terminated`); Django's development server (`make run`, the tests' live server)
    hands on a stream limited to Content-Length, so the framing is decoded here from the
    socket's reader beneath it."""
    environ = request.META
    if (
        environ.get("CONTENT_LENGTH")
        or "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    ):
        body = request.read(limit + 1)
    elif environ.get("wsgi.input_terminated"):
        body = environ["wsgi.input"].read(limit + 1)
    else:
        stream = environ["wsgi.input"]
        if isinstance(stream, LimitedStream):
            stream = getattr(getattr(stream, "_read", None), "__self__", stream)
        body = _dechunk(stream, limit=limit)
    if len(body) > limit:
        raise PayloadTooLarge(f"The body is larger than {limit} bytes.")
    return body


def _dechunk(stream, *, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        line = stream.readline(1026)
        try:
            chunk = int(line.split(b";", 1)[0].strip() or b"x", 16)
        except ValueError:
            raise BadRequest("Malformed chunked body.") from None
        if chunk == 0:
            while stream.readline(1026) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        size += chunk
        if size > limit:
            return b"x" * (limit + 1)
        data = stream.read(chunk)
        if len(data) != chunk:
            raise BadRequest("The chunked body ended early.")
        parts.append(data)
        stream.readline(4)


class OtlpTracesViewSet(AgentViewSet):
    """OTLP/HTTP traces: `OTEL_EXPORTER_OTLP_ENDPOINT=<base>/v1/otlp` and the exporter's own
    `/v1/traces` lands here. The body is read raw (no DRF parser): its Content-Type picks the
    OTLP encoding."""

    required_scopes = {"create": "activity:write"}
    extension_actions = ("create",)
    error_statuses = {"create": (413, 415)}
    openapi_tags = ["Ingest"]
    parser_classes: list = []
    reads_chunked_bodies = True  # _raw_body decodes the framing (apps.api.middleware)

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
        decoded = otlp.request_decode(body, kind=kind)
        result = spans_record(agent=self.agent, spans=decoded.spans)
        rejected = decoded.rejected + result.rejected
        message = " ".join([*decoded.errors, *result.errors][:5])
        content, content_type = otlp.response_body(kind=kind, rejected=rejected, message=message)
        return HttpResponse(content, status=200, content_type=content_type)
