"""The OpenAPI description of scores and score configs. Input is checked by the services
(apps.scores.services: strict, every problem named per item); output is built by
apps.scores.rendering. These serializers only describe both for the document."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.scores.models import DataType, Source, TargetType


@extend_schema_field({"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]})
class ScoreValueField(serializers.Field):
    pass


class ScoreOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["score"])  # type: ignore[assignment]
    id = serializers.CharField()
    target_type = serializers.ChoiceField(choices=TargetType.values)
    run_id = serializers.CharField(
        allow_null=True, help_text="The run judged, or the run of the step or message judged."
    )
    step_id = serializers.CharField(allow_null=True)
    conversation_id = serializers.CharField(
        allow_null=True, help_text="The conversation the target belongs to."
    )
    message_id = serializers.CharField(allow_null=True)
    name = serializers.CharField()
    data_type = serializers.ChoiceField(choices=DataType.values)
    value = ScoreValueField(
        help_text="A number (numeric), a category (categorical) or true/false (boolean)."
    )
    comment = serializers.CharField(allow_null=True)
    source = serializers.ChoiceField(choices=Source.values)  # type: ignore[assignment]
    author_type = serializers.ChoiceField(choices=["api_key", "end_user", "member"])
    author_id = serializers.CharField(
        allow_null=True, help_text="The API key's id, the end user's id or the member's id."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ScoreCreateIn(serializers.Serializer):
    id = serializers.CharField(
        required=False,
        help_text="Your id for the score (1 to 64 of A-Z a-z 0-9 _ . : -): sending the same id and body again records nothing new; another body is 409.",
    )
    run_id = serializers.CharField(required=False)
    step_id = serializers.CharField(required=False)
    conversation_id = serializers.CharField(required=False)
    message_id = serializers.CharField(
        required=False, help_text="Exactly one of run_id, step_id, conversation_id, message_id."
    )
    name = serializers.CharField(max_length=100)
    value = ScoreValueField()
    data_type = serializers.ChoiceField(
        choices=DataType.values,
        required=False,
        help_text="Default: the name's score config's, else told by the value's JSON type.",
    )
    comment = serializers.CharField(required=False, allow_null=True, max_length=2000)
    created_at = serializers.DateTimeField(required=False, help_text="Default: now.")


class ScoreBatchOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["score_batch"])
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    data = ScoreOut(many=True)  # type: ignore[assignment]


class ScoreConfigOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["score_config"])
    id = serializers.CharField()
    name = serializers.CharField()
    data_type = serializers.ChoiceField(choices=DataType.values)
    min_value = serializers.FloatField(allow_null=True)
    max_value = serializers.FloatField(allow_null=True)
    categories = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField()
    archived = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ScoreConfigCreateIn(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    data_type = serializers.ChoiceField(choices=DataType.values)
    min_value = serializers.FloatField(required=False, allow_null=True)
    max_value = serializers.FloatField(required=False, allow_null=True)
    categories = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=50
    )
    description = serializers.CharField(required=False, max_length=500)


class ScoreConfigUpdateIn(serializers.Serializer):
    min_value = serializers.FloatField(required=False, allow_null=True)
    max_value = serializers.FloatField(required=False, allow_null=True)
    categories = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=50
    )
    description = serializers.CharField(required=False, max_length=500)
    archived = serializers.BooleanField(required=False)


class FeedbackIn(serializers.Serializer):
    value = serializers.BooleanField(help_text="true: thumbs up; false: thumbs down.")
    comment = serializers.CharField(required=False, allow_null=True, max_length=2000)


class ScoreRecordIn(ScoreCreateIn):
    """A `score` record of POST /v1/ingest: a score's fields and `type`."""

    type = serializers.ChoiceField(choices=["score"])
