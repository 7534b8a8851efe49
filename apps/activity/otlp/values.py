"""Attribute values as JSON: an OTLP `AnyValue` turned into plain Python, strings cut and NUL
cleaned (PostgreSQL text and jsonb cannot hold it)."""

import re
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue

# A string attribute longer than this is cut before anything else looks at it (the step's own
# bounds, apps.activity.bounds, are smaller, so the cut value is still marked truncated there).
MAX_DECODED_STRING = 64 * 1024
_MAX_ANY_VALUE_DEPTH = 16


def _value(value: AnyValue, depth: int = 0) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return _clean(value.string_value[:MAX_DECODED_STRING])
    if kind == "bytes_value":
        return value.bytes_value[: MAX_DECODED_STRING // 2].hex()
    if kind in ("bool_value", "int_value", "double_value"):
        return getattr(value, kind)
    if depth >= _MAX_ANY_VALUE_DEPTH:
        return "…"
    if kind == "array_value":
        return [_value(item, depth + 1) for item in value.array_value.values[:1000]]
    return {
        _key(item.key): _value(item.value, depth + 1) for item in value.kvlist_value.values[:1000]
    }


# PostgreSQL text and jsonb cannot hold NUL (U+0000): a value's NUL becomes U+FFFD, a key's is
# dropped, wherever it hides (nested arrays and key-value lists, event names, JSON carried in a
# string attribute), so that one NUL costs a character, not the batch.
def _clean(text: str) -> str:
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _key(text: str) -> str:
    return text.replace("\x00", "") if "\x00" in text else text


# The escape `\u0000` in JSON text (not `\\u0000`, an escaped backslash and "u0000").
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def json_cleaned(text: str) -> str:
    """JSON text whose strings and keys, once read, hold U+FFFD where the text escapes NUL."""
    return _JSON_NUL.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def _attributes(attributes) -> dict[str, Any]:
    return {_key(item.key): _value(item.value) for item in attributes}
