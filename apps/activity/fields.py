"""Strict input fields for activity's records (apps.activity.records) and browser-token input:
each refuses what the contract does not allow instead of coercing it (`"1"` is not a number).
"""

import re

import orjson
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator, URLValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.activity import dimensions
from apps.activity.models import ID_MAX_LENGTH
from apps.api.serializers import StrictCharField, StrictIntegerField, StrictListField

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")


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


def nullable_text(max_length: int = 255):
    return StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=max_length,
        trim_whitespace=False,
    )


def token_count():
    return StrictIntegerField(required=False, allow_null=True, min_value=0)


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
