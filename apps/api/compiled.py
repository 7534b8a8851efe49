"""A strict serializer's validation compiled into one plain function per serializer, for the hot
paths (a batch of a thousand records to ingest): DRF's generic machinery per field
(`get_value`, `validate_empty_values`, the validators' loops) cost more than the checks
themselves.

The serializer stays the one source of the rules: the compiled function is built from its
declared fields (their classes, `allow_null`, `allow_blank`, `trim_whitespace`, validators)
and calls each field's own `to_internal_value`. It answers only when it is certain that the
serializer accepts the data and returns the same values; whenever a value could be refused or
changed (a bad type, blank, surrounding spaces, an unknown validator, an unknown key), it
answers `None`, and the caller runs the serializer, whose error message is the contract's.
tests/api/test_compiled_validation.py holds the two to the same answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.core.validators import (
    MaxLengthValidator,
    MaxValueValidator,
    MinLengthValidator,
    MinValueValidator,
    ProhibitNullCharactersValidator,
)
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

Compiled = Callable[[Any], dict | None]
# A field's check: the validated value, or _DOUBT when only the serializer can say.
_DOUBT = object()
_SURROGATE = re.compile("[\ud800-\udfff]")
# IntegerField refuses integers whose text is longer than 1,000 digits; these are far inside.
_INT_BOUND = 10**100


def _validator_check(validator) -> Callable[[Any], bool]:
    """A validator as a predicate: True when the value passes."""
    if isinstance(validator, ProhibitSurrogateCharactersValidator):
        return lambda value: value.isascii() or _SURROGATE.search(value) is None
    if isinstance(validator, ProhibitNullCharactersValidator):
        return lambda value: "\x00" not in value
    if getattr(validator, "requires_context", False):
        return lambda value: False
    limit = getattr(validator, "limit_value", None)
    if limit is not None and not callable(limit):
        if type(validator) is MaxLengthValidator:
            return lambda value: len(value) <= limit
        if type(validator) is MinLengthValidator:
            return lambda value: len(value) >= limit
        if type(validator) is MaxValueValidator:
            return lambda value: value <= limit
        if type(validator) is MinValueValidator:
            return lambda value: value >= limit

    def generic(value) -> bool:
        try:
            validator(value)
        except Exception:  # any refusal is the serializer's to word
            return False
        return True

    return generic


def _field_check(field: serializers.Field) -> Callable[[Any], Any]:
    """The check of one declared field, for a value that is present (DRF's `run_validation`
    for it, without its generic steps)."""
    checks = [_validator_check(validator) for validator in field.validators]
    allow_null = field.allow_null
    to_internal = field.to_internal_value

    if isinstance(field, serializers.CharField):
        allow_blank, trim = field.allow_blank, field.trim_whitespace

        def char(value):
            if value is None:
                return None if allow_null else _DOUBT
            if type(value) is not str:
                return _DOUBT
            if value == "" or (trim and value.strip() != value):
                return "" if allow_blank and value.strip() == "" else _DOUBT
            try:
                if to_internal(value) != value:
                    return _DOUBT
            except Exception:  # the serializer's to raise, as it would
                return _DOUBT
            for check in checks:
                if not check(value):
                    return _DOUBT
            return value

        return char

    if isinstance(field, serializers.IntegerField):

        def integer(value):
            if value is None:
                return None if allow_null else _DOUBT
            if type(value) is not int or not -_INT_BOUND < value < _INT_BOUND:
                return _DOUBT
            for check in checks:
                if not check(value):
                    return _DOUBT
            return value

        return integer

    if isinstance(field, serializers.DecimalField | serializers.BaseSerializer):
        return lambda value: _DOUBT  # own emptiness rules, nested validation: not compiled

    def other(value):
        if value is None:
            return None if allow_null else _DOUBT
        try:
            result = to_internal(value)
        except Exception:  # the serializer's to raise, as it would
            return _DOUBT
        for check in checks:
            if not check(result):
                return _DOUBT
        return result

    return other


def compile_serializer(serializer: serializers.Serializer) -> Compiled:
    """`serializer`'s validation as a function of the raw data: the validated dict, or None
    when the serializer must decide (module docstring)."""
    fields = list(serializer.fields.values())
    plain = (
        type(serializer).validate is serializers.Serializer.validate
        and not serializer.validators
        and all(
            field.source == field.field_name
            and not field.read_only
            and field.default is empty
            and not hasattr(serializer, f"validate_{field.field_name}")
            for field in fields
        )
    )
    if not plain:
        return lambda data: None
    names = frozenset(field.field_name for field in fields)
    required = frozenset(field.field_name for field in fields if field.required)
    steps = [(field.field_name, _field_check(field)) for field in fields]

    def validate(data: Any) -> dict | None:
        if type(data) is not dict or not names.issuperset(data) or not required <= data.keys():
            return None
        out = {}
        for name, check in steps:
            if name in data:
                value = check(data[name])
                if value is _DOUBT:
                    return None
                out[name] = value
        return out

    return validate
