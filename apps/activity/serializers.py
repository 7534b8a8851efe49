"""Activity shapes: `...Out` describe the contract's objects for OpenAPI (output is built by
apps.activity.rendering), `...RecordIn` validate the records the runtime sends to
POST /v1/ingest and `import_activity` — one record format for both.

A record is the contract's resource fields (minus `object`) plus `type`, plus
`conversation_id` for messages and `conversation_id`/`user_id` for runs. Every field but
`type` is optional in the schema; which ones a *new* row needs is the recording service's rule.
"""

import re
import threading
from dataclasses import dataclass

import orjson
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator, URLValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.activity import dimensions, events
from apps.activity.models import (
    ID_MAX_LENGTH,
    Conversation,
    EndUser,
    Message,
    RunStatus,
    StepKind,
    StepStatus,
)
from apps.api.compiled import Compiled, compile_serializer
from apps.api.serializers import (
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)
from apps.common.errors import BadRequest
from apps.workspaces.browser_tokens import MAX_LIFETIME_SECONDS, MIN_LIFETIME_SECONDS

MAX_RECORDS_PER_REQUEST = 1000
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")

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


# --- Strict input fields ---------------------------------------------------------------------


class RecordIdField(StrictCharField):
    def __init__(self, **kwargs) -> None:
        super().__init__(max_length=ID_MAX_LENGTH, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not _ID_PATTERN.match(value):
            raise serializers.ValidationError(
                "Must be letters, digits, '_', '-', '.' or ':' (for example run_01J...)."
            )
        return value


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(
                f"Must be one of: {', '.join(map(str, self.choices))}."
            )
        if data not in self.choices:
            raise serializers.ValidationError(
                f"Must be one of: {', '.join(map(str, self.choices))}; got {data!r}."
            )
        return data


@extend_schema_field({"type": "number", "minimum": 0})
class StrictNumberField(serializers.Field):
    def __init__(self, *, min_value: float | None = None, **kwargs) -> None:
        self.min_value = min_value
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("Must be a JSON number.")
        if self.min_value is not None and data < self.min_value:
            raise serializers.ValidationError(f"Must be at least {self.min_value}.")
        return float(data)

    def to_representation(self, value):
        return value


class StrictStringListField(StrictListField):
    def __init__(self, **kwargs) -> None:
        super().__init__(child=StrictCharField(max_length=255), **kwargs)


@extend_schema_field({"type": "array", "items": {}})
class PartsField(serializers.Field):
    """AI SDK message parts: a JSON array, stored exactly as given."""

    def to_internal_value(self, data) -> list:
        if not isinstance(data, list):
            raise serializers.ValidationError("Must be a JSON array of message parts.")
        if b"\\u0000" in orjson.dumps(data):
            # PostgreSQL's jsonb cannot store NUL characters.
            raise serializers.ValidationError("Must not contain NUL (\\u0000) characters.")
        return data

    def to_representation(self, value):
        return value


@extend_schema_field(OpenApiTypes.EMAIL)
class EmailStringField(StrictCharField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            EmailValidator()(value)
        except DjangoValidationError:
            raise serializers.ValidationError("Must be an email address.") from None
        return value


@extend_schema_field(OpenApiTypes.URI)
class HttpUrlField(StrictCharField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            URLValidator(schemes=["http", "https"])(value)
        except DjangoValidationError:
            raise serializers.ValidationError("Must be an http or https URL.") from None
        return value


@extend_schema_field(
    {"type": "array", "items": {"type": "string", "minLength": 1,
     "maxLength": dimensions.TAG_MAX}, "maxItems": dimensions.TAGS_MAX}
)  # fmt: skip
class TagsField(serializers.Field):
    """A run's tags: a set of short strings (apps.activity.dimensions)."""

    def to_internal_value(self, data) -> list[str]:
        try:
            return dimensions.tags_check(data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value):
        return value


@extend_schema_field(
    {"type": "object", "maxProperties": dimensions.METADATA_KEYS_MAX,
     "additionalProperties": {"oneOf": [
         {"type": "string", "maxLength": dimensions.METADATA_VALUE_MAX},
         {"type": "number"}, {"type": "boolean"}]}}
)  # fmt: skip
class MetadataField(serializers.Field):
    """A run's metadata: a flat object of short keys to scalars (apps.activity.dimensions)."""

    def to_internal_value(self, data) -> dict:
        try:
            return dimensions.metadata_check(data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value):
        return value


def _nullable_text(max_length: int = 255):
    return StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=max_length,
        trim_whitespace=False,
    )


def _tokens():
    return StrictIntegerField(required=False, allow_null=True, min_value=0)


# --- Records -----------------------------------------------------------------------------------


class _RecordIn(StrictSerializer):
    pass


class UserRecordIn(_RecordIn):
    type = StrictChoiceField(choices=["user"])
    id = RecordIdField(required=False)
    external_id = StrictCharField(required=False, allow_null=True, max_length=255)
    identity_type = StrictChoiceField(choices=EndUser.IdentityType.values, required=False)
    display_name = _nullable_text()
    email = EmailStringField(required=False, allow_null=True, max_length=320)
    avatar_url = HttpUrlField(required=False, allow_null=True, max_length=2048)
    first_seen_at = StrictDateTimeField(required=False)
    last_seen_at = StrictDateTimeField(required=False)


class ConversationRecordIn(_RecordIn):
    type = StrictChoiceField(choices=["conversation"])
    id = RecordIdField(required=False)
    title = _nullable_text(500)
    status = StrictChoiceField(choices=_STATUS, required=False, allow_null=True)
    source = StrictChoiceField(  # type: ignore[assignment]  # the contract names it
        choices=Conversation.Source.values, required=False, allow_null=True
    )
    user_id = RecordIdField(required=False, allow_null=True)
    created_at = StrictDateTimeField(required=False)
    updated_at = StrictDateTimeField(required=False)


class MessageRecordIn(_RecordIn):
    type = StrictChoiceField(choices=["message"])
    id = RecordIdField(required=False)
    conversation_id = RecordIdField(required=False)
    role = StrictChoiceField(choices=Message.Role.values, required=False)
    parts = PartsField(required=False)
    source_id = _nullable_text()
    run_id = RecordIdField(
        required=False,
        allow_null=True,
        help_text="The run that produced this message (a run of the same conversation).",
    )
    created_at = StrictDateTimeField(required=False)
    updated_at = StrictDateTimeField(required=False, allow_null=True)


class RunRecordIn(_RecordIn):
    type = StrictChoiceField(choices=["run"])
    id = RecordIdField(required=False)
    conversation_id = RecordIdField(required=False)
    user_id = RecordIdField(required=False, allow_null=True)
    request_id = StrictCharField(required=False, max_length=255)
    status = StrictChoiceField(choices=_STATUS, required=False)
    model_id = _nullable_text()
    effort = _nullable_text(64)
    sdk_version = StrictCharField(required=False, max_length=64)
    protocol_version = StrictIntegerField(required=False, min_value=1)
    input_tokens = _tokens()
    output_tokens = _tokens()
    total_tokens = _tokens()
    cache_read_tokens = _tokens()
    cache_write_tokens = _tokens()
    credits_charged = StrictNumberField(required=False, allow_null=True, min_value=0)
    tool_names = StrictStringListField(required=False)
    failed_tool_names = StrictStringListField(required=False)
    component_kinds = StrictStringListField(required=False)
    error_code = _nullable_text()
    first_chunk_at = StrictDateTimeField(required=False, allow_null=True)
    completed_at = StrictDateTimeField(required=False, allow_null=True)
    total_turn_latency_ms = StrictNumberField(required=False, allow_null=True, min_value=0)
    created_at = StrictDateTimeField(required=False)
    updated_at = StrictDateTimeField(required=False)
    # The run's dimensions (extension; GET /v1/runs/{id}/attributes): replaced when sent.
    environment = StrictCharField(
        required=False, allow_null=True, max_length=dimensions.ENVIRONMENT_MAX
    )
    release = StrictCharField(required=False, allow_null=True, max_length=dimensions.RELEASE_MAX)
    tags = TagsField(required=False, help_text="A set of short strings (extension).")
    metadata = MetadataField(
        required=False, help_text="A flat object of keys to short scalars (extension)."
    )


@extend_schema_field({})
class AnyJsonField(serializers.Field):
    """Any JSON value (a step's input or output); NUL characters are refused, PostgreSQL's
    jsonb cannot store them. Size is bounded by the recording service (truncated, marked)."""

    def to_internal_value(self, data):
        if b"\\u0000" in orjson.dumps(data):
            raise serializers.ValidationError("Must not contain NUL (\\u0000) characters.")
        return data

    def to_representation(self, value):
        return value


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(AnyJsonField):
    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return super().to_internal_value(data)


class DocumentIn(StrictSerializer):
    document_id = StrictCharField(required=False, allow_null=True, max_length=255)
    title = _nullable_text(500)
    url = StrictCharField(required=False, allow_null=True, max_length=2048)
    passage = StrictCharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    score = StrictNumberField(required=False, allow_null=True)


class StepRecordIn(_RecordIn):
    """One step of a run (contract extension): a model call, tool call, retrieval or custom
    span. See docs/activity-recording.md, "Steps of a run"."""

    type = StrictChoiceField(choices=["step"])
    id = RecordIdField(required=False)
    run_id = RecordIdField(required=False)
    parent_id = RecordIdField(required=False, allow_null=True)
    kind = StrictChoiceField(choices=StepKind.values, required=False)
    name = StrictCharField(required=False, max_length=255)
    status = StrictChoiceField(choices=StepStatus.values, required=False)
    error = StrictCharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    started_at = StrictDateTimeField(required=False)
    ended_at = StrictDateTimeField(required=False, allow_null=True)
    duration_ms = StrictNumberField(required=False, allow_null=True, min_value=0)
    input = AnyJsonField(required=False, allow_null=True)
    output = AnyJsonField(required=False, allow_null=True)
    model_id = _nullable_text()
    input_tokens = _tokens()
    output_tokens = _tokens()
    total_tokens = _tokens()
    cache_read_tokens = _tokens()
    cache_write_tokens = _tokens()
    credits_charged = StrictNumberField(required=False, allow_null=True, min_value=0)
    first_token_ms = StrictNumberField(required=False, allow_null=True, min_value=0)
    finish_reason = _nullable_text(64)
    tool_name = _nullable_text()
    mcp_server = _nullable_text()
    query = StrictCharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    documents = StrictListField(child=DocumentIn(), required=False)
    attributes = JsonObjectField(required=False)


RECORD_SERIALIZERS: dict[str, type[_RecordIn]] = {
    "user": UserRecordIn,
    "conversation": ConversationRecordIn,
    "message": MessageRecordIn,
    "run": RunRecordIn,
    "step": StepRecordIn,
}


@dataclass(frozen=True)
class Record:
    """One validated record: its kind, the fields it carried, and its label for messages."""

    kind: str
    fields: dict
    label: str


def _first_error(detail) -> tuple[str, str]:
    """(dotted field path, message) of DRF's first error."""
    if isinstance(detail, dict):
        field, value = next(iter(detail.items()))
        inner_path, message = _first_error(value)
        path = "" if field == "non_field_errors" else str(field)
        if inner_path:
            path = f"{path}[{inner_path}]" if inner_path.isdigit() else f"{path}.{inner_path}"
        return path, message
    if isinstance(detail, list) and detail:
        return _first_error(detail[0])
    return "", str(detail)


_validators = threading.local()


def _validator(kind: str) -> tuple[_RecordIn, Compiled]:
    """One serializer per kind and thread, reused: building one deep-copies its ~30 fields
    (2 ms a record), validating with it keeps no state between records. With it, its compiled
    form (apps.api.compiled): a record it is sure of skips DRF's machinery."""
    cache = getattr(_validators, "by_kind", None)
    if cache is None:
        cache = _validators.by_kind = {}
    if kind not in cache:
        serializer = RECORD_SERIALIZERS[kind]()
        cache[kind] = (serializer, compile_serializer(serializer))
    return cache[kind]


def record_parse(item, *, label: str) -> Record:
    """Validate one raw record; a problem is a BadRequest naming `label.field`."""
    if not isinstance(item, dict):
        raise BadRequest(f"{label}: must be a JSON object with a 'type'.")
    kind = item.get("type")
    serializer_class = RECORD_SERIALIZERS.get(kind) if isinstance(kind, str) else None
    if serializer_class is None or not isinstance(kind, str):
        other = events.ingest_kind(kind) if isinstance(kind, str) else None
        if other is not None and isinstance(kind, str):  # another app's kind (activity.events)
            parsed = other.parse(
                {name: value for name, value in item.items() if name != "type"}, label
            )
            return Record(kind=kind, fields=parsed, label=label)
        kinds = [*RECORD_SERIALIZERS, *events.ingest_kind_names()]
        raise BadRequest(f"{label}.type: must be one of: {', '.join(kinds)}.")
    serializer, compiled = _validator(kind)
    fields = compiled(item)
    if fields is None:  # not certain: the serializer decides, and words the error
        try:
            fields = dict(serializer.run_validation(item))
        except serializers.ValidationError as exc:
            path, message = _first_error(exc.detail)
            where = f"{label}.{path}" if path else label
            raise BadRequest(f"{where}: {message}") from None
    fields.pop("type")
    return Record(kind=kind, fields=fields, label=label)


def records_parse(data) -> list[Record]:
    """A JSON array of records, as POST /v1/ingest receives it."""
    if not isinstance(data, list):
        raise BadRequest("The body must be a JSON array of records.")
    if not data:
        raise BadRequest("The body must hold at least one record.")
    if len(data) > MAX_RECORDS_PER_REQUEST:
        raise BadRequest(f"At most {MAX_RECORDS_PER_REQUEST} records per request; got {len(data)}.")
    return [record_parse(item, label=f"records[{index}]") for index, item in enumerate(data)]


# --- Browser tokens ------------------------------------------------------------------------------


class AuthTokenCreateIn(StrictSerializer):
    external_id = StrictCharField(
        max_length=255, help_text="Your id for the end user; upserts the user by it."
    )
    display_name = _nullable_text()
    email = EmailStringField(required=False, allow_null=True, max_length=320)
    expires_in = StrictIntegerField(
        required=False,
        min_value=MIN_LIFETIME_SECONDS,
        max_value=MAX_LIFETIME_SECONDS,
        help_text="Lifetime in seconds: 60 to 86400, default 3600.",
    )
