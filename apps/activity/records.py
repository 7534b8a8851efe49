"""The records the runtime sends to POST /v1/ingest and `import_activity` — one record format
for both — and their validation.

A record is the contract's resource fields (minus `object`) plus `type`, plus
`conversation_id` for messages and `conversation_id`/`user_id` for runs. Every field but
`type` is optional in the schema; which ones a *new* row needs is the recording service's rule.
"""

import threading
from dataclasses import dataclass

from rest_framework import serializers

from apps.activity import dimensions, events
from apps.activity.fields import (
    AnyJsonField,
    EmailStringField,
    HttpUrlField,
    JsonObjectField,
    MetadataField,
    PartsField,
    RecordIdField,
    StrictChoiceField,
    StrictNumberField,
    StrictStringListField,
    TagsField,
    nullable_text,
    token_count,
)
from apps.activity.models import Conversation, EndUser, Message, RunStatus, StepKind, StepStatus
from apps.api.compiled import Compiled, compile_serializer
from apps.api.serializers import (
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)
from apps.common.errors import BadRequest

MAX_RECORDS_PER_REQUEST = 1000
_STATUS = [choice.value for choice in RunStatus]


class _RecordIn(StrictSerializer):
    pass


class UserRecordIn(_RecordIn):
    type = StrictChoiceField(choices=["user"])
    id = RecordIdField(required=False)
    external_id = StrictCharField(required=False, allow_null=True, max_length=255)
    identity_type = StrictChoiceField(choices=EndUser.IdentityType.values, required=False)
    display_name = nullable_text()
    email = EmailStringField(required=False, allow_null=True, max_length=320)
    avatar_url = HttpUrlField(required=False, allow_null=True, max_length=2048)
    first_seen_at = StrictDateTimeField(required=False)
    last_seen_at = StrictDateTimeField(required=False)


class ConversationRecordIn(_RecordIn):
    type = StrictChoiceField(choices=["conversation"])
    id = RecordIdField(required=False)
    title = nullable_text(500)
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
    source_id = nullable_text()
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
    model_id = nullable_text()
    effort = nullable_text(64)
    sdk_version = StrictCharField(required=False, max_length=64)
    protocol_version = StrictIntegerField(required=False, min_value=1)
    input_tokens = token_count()
    output_tokens = token_count()
    total_tokens = token_count()
    cache_read_tokens = token_count()
    cache_write_tokens = token_count()
    credits_charged = StrictNumberField(required=False, allow_null=True, min_value=0)
    tool_names = StrictStringListField(required=False)
    failed_tool_names = StrictStringListField(required=False)
    component_kinds = StrictStringListField(required=False)
    error_code = nullable_text()
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


class DocumentIn(StrictSerializer):
    document_id = StrictCharField(required=False, allow_null=True, max_length=255)
    title = nullable_text(500)
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
    model_id = nullable_text()
    input_tokens = token_count()
    output_tokens = token_count()
    total_tokens = token_count()
    cache_read_tokens = token_count()
    cache_write_tokens = token_count()
    credits_charged = StrictNumberField(required=False, allow_null=True, min_value=0)
    first_token_ms = StrictNumberField(required=False, allow_null=True, min_value=0)
    finish_reason = nullable_text(64)
    tool_name = nullable_text()
    mcp_server = nullable_text()
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
