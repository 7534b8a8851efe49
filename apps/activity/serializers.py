"""Activity shapes: `...Out` describe the contract's objects for OpenAPI (output is built by
apps.activity.rendering); `AuthTokenCreateIn` is the strict input of POST /v1/auth/token. The
records of POST /v1/ingest are validated in apps.activity.records.
"""

from rest_framework import serializers

from apps.activity.fields import EmailStringField, nullable_text
from apps.activity.models import Conversation, Message, RunStatus, StepKind, StepStatus
from apps.api.serializers import StrictCharField, StrictIntegerField, StrictSerializer
from apps.workspaces.browser_tokens import MAX_LIFETIME_SECONDS, MIN_LIFETIME_SECONDS

# --- Output (OpenAPI only) -------------------------------------------------------------------

_STATUS = [choice.value for choice in RunStatus]


class UserOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["user"])
    id = serializers.CharField()
    external_id = serializers.CharField(allow_null=True)
    identity_type = serializers.CharField(
        help_text="Observed identity kind: `anonymous`, `user` or `preview`; legacy `unknown`."
    )
    display_name = serializers.CharField(allow_null=True)
    email = serializers.EmailField(allow_null=True)
    avatar_url = serializers.URLField(allow_null=True)
    first_seen_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()


class ConversationOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["conversation"])
    id = serializers.CharField()
    title = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=_STATUS, allow_null=True)
    source = serializers.ChoiceField(  # type: ignore[assignment]  # the contract names it
        choices=Conversation.Source.values, allow_null=True
    )
    user_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MessageOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["message"])
    id = serializers.CharField()
    role = serializers.ChoiceField(choices=Message.Role.values)
    parts = serializers.ListField(
        child=serializers.JSONField(),
        help_text="Persisted AI SDK message parts, as recorded; items are unconstrained.",
    )
    source_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(allow_null=True)


class RunOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["run"])
    id = serializers.CharField()
    conversation_id = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    request_id = serializers.CharField()
    status = serializers.ChoiceField(choices=_STATUS)
    model_id = serializers.CharField(allow_null=True)
    effort = serializers.CharField(allow_null=True)
    sdk_version = serializers.CharField()
    protocol_version = serializers.IntegerField(min_value=1)
    input_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    output_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    total_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    cache_read_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    cache_write_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    credits_charged = serializers.FloatField(min_value=0, allow_null=True)
    tool_names = serializers.ListField(child=serializers.CharField())
    failed_tool_names = serializers.ListField(child=serializers.CharField())
    component_kinds = serializers.ListField(child=serializers.CharField())
    error_code = serializers.CharField(allow_null=True)
    first_chunk_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    total_turn_latency_ms = serializers.FloatField(
        min_value=0, allow_null=True, help_text="Milliseconds."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RunAttributesOut(serializers.Serializer):
    """A run's dimensions (extension): what it ran in and what the runtime labelled it with."""

    object = serializers.ChoiceField(choices=["run_attributes"])
    run_id = serializers.CharField()
    environment = serializers.CharField(
        allow_null=True, help_text="For example production; OTLP: deployment.environment.name."
    )
    release = serializers.CharField(
        allow_null=True, help_text="The Agent's version; OTLP: service.version."
    )
    tags = serializers.ListField(child=serializers.CharField(), help_text="A set of labels.")
    metadata = serializers.DictField(help_text="Flat keys to short scalar values.")


class StepDocumentOut(serializers.Serializer):
    document_id = serializers.CharField(allow_null=True, required=False)
    title = serializers.CharField(allow_null=True, required=False)
    url = serializers.CharField(allow_null=True, required=False)
    passage = serializers.CharField(allow_null=True, required=False)
    score = serializers.FloatField(allow_null=True, required=False)


class StepOut(serializers.Serializer):
    """A step of a run (extension): one span of its trace."""

    object = serializers.ChoiceField(choices=["run_step"])
    id = serializers.CharField(help_text="The step's id; for OpenTelemetry spans the span id.")
    run_id = serializers.CharField()
    parent_id = serializers.CharField(allow_null=True, help_text="The parent step; null at top.")
    trace_id = serializers.CharField(allow_null=True, help_text="OpenTelemetry trace id.")
    kind = serializers.ChoiceField(choices=StepKind.values)
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=StepStatus.values)
    error = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.FloatField(allow_null=True, min_value=0)
    input = serializers.JSONField(allow_null=True)
    output = serializers.JSONField(allow_null=True)
    model_id = serializers.CharField(allow_null=True)
    input_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    output_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    total_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    cache_read_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    cache_write_tokens = serializers.IntegerField(min_value=0, allow_null=True)
    credits_charged = serializers.FloatField(min_value=0, allow_null=True)
    first_token_ms = serializers.FloatField(
        min_value=0, allow_null=True, help_text="Milliseconds from the step's start."
    )
    finish_reason = serializers.CharField(allow_null=True)
    tool_name = serializers.CharField(allow_null=True)
    mcp_server = serializers.CharField(allow_null=True)
    query = serializers.CharField(allow_null=True)
    documents = StepDocumentOut(many=True)
    attributes = serializers.DictField(help_text="Attributes with no field of their own.")
    truncated = serializers.ListField(
        child=serializers.CharField(),
        help_text="Fields stored shortened because they were too large (`input`, "
        "`attributes.<name>`, ...).",
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class IngestResultOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["ingest_result"])
    created = serializers.IntegerField(min_value=0, help_text="Records that created a row.")
    updated = serializers.IntegerField(min_value=0, help_text="Records that changed a row.")
    unchanged = serializers.IntegerField(
        min_value=0, help_text="Records identical to what was already recorded."
    )


class AuthTokenOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["auth_token"])
    token = serializers.CharField(help_text="The browser token: `Authorization: Bearer abt_...`.")
    expires_at = serializers.DateTimeField()
    user_id = serializers.CharField(help_text="The end user the token is bound to.")
    agent_id = serializers.CharField()


# --- Browser tokens ------------------------------------------------------------------------------


class AuthTokenCreateIn(StrictSerializer):
    external_id = StrictCharField(
        max_length=255, help_text="Your id for the end user; upserts the user by it."
    )
    display_name = nullable_text()
    email = EmailStringField(required=False, allow_null=True, max_length=320)
    expires_in = StrictIntegerField(
        required=False,
        min_value=MIN_LIFETIME_SECONDS,
        max_value=MAX_LIFETIME_SECONDS,
        help_text="Lifetime in seconds: 60 to 86400, default 3600.",
    )
