"""A run's dimensions: the environment and release it ran in, its tags and its metadata.

What an engineer on call filters by ("the failed runs of release 1.4.2 in production for the
gold tier"). Recorded from `/v1/ingest` run records (strict: a value past a limit is a 400) and
mapped from OpenTelemetry (lenient: a value past a limit is shortened or left out, never a
rejected span); served as their own object, `GET /v1/runs/{id}/attributes`, and as filters on
the runs and conversations lists. The mapping from OTLP is in docs/activity-recording.md,
"Dimensions".

Bounded so a run row stays small and every filter an index look-up:
- `environment`: at most 64 characters; `release`: at most 128.
- `tags`: a set of at most 20 strings of 1 to 64 characters (kept in first-seen order).
- `metadata`: a flat object of at most 32 keys (1 to 64 characters) to scalars: strings of
  at most 256 characters, numbers or booleans (no null, no arrays or objects).
"""

from typing import Any

ENVIRONMENT_MAX = 64
RELEASE_MAX = 128
TAGS_MAX = 20
TAG_MAX = 64
METADATA_KEYS_MAX = 32
METADATA_KEY_MAX = 64
METADATA_VALUE_MAX = 256


def tags_check(value: Any) -> list[str]:
    """The tags of a run record, de-duplicated; ValueError says what is wrong."""
    if not isinstance(value, list):
        raise ValueError("Must be a JSON array of strings.")
    tags: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item or len(item) > TAG_MAX or "\x00" in item:
            raise ValueError(f"Each tag must be a string of 1 to {TAG_MAX} characters.")
        if item not in tags:
            tags.append(item)
    if len(tags) > TAGS_MAX:
        raise ValueError(f"At most {TAGS_MAX} tags.")
    return tags


def _scalar_ok(value: Any) -> bool:
    if isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    return isinstance(value, str) and len(value) <= METADATA_VALUE_MAX and "\x00" not in value


def metadata_check(value: Any) -> dict[str, Any]:
    """The metadata of a run record; ValueError says what is wrong."""
    if not isinstance(value, dict):
        raise ValueError("Must be a JSON object of keys to strings, numbers or booleans.")
    if len(value) > METADATA_KEYS_MAX:
        raise ValueError(f"At most {METADATA_KEYS_MAX} keys.")
    for key, item in value.items():
        if not key or len(key) > METADATA_KEY_MAX or "\x00" in key:
            raise ValueError(f"Each key must be 1 to {METADATA_KEY_MAX} characters.")
        if not _scalar_ok(item):
            raise ValueError(
                f"{key}: must be a string of at most {METADATA_VALUE_MAX} characters, a number "
                "or a boolean."
            )
    return dict(value)


def tags_lenient(values: list[Any]) -> list[str]:
    """Tags from telemetry: strings kept (shortened), anything else left out, at most TAGS_MAX."""
    tags: list[str] = []
    for item in values:
        if isinstance(item, str):
            item = item.replace("\x00", "").strip()[:TAG_MAX]
            if item and item not in tags:
                tags.append(item)
        if len(tags) == TAGS_MAX:
            break
    return tags


def metadata_lenient(items: dict[str, Any]) -> dict[str, Any]:
    """Metadata from telemetry: scalars kept (strings shortened), the first METADATA_KEYS_MAX."""
    kept: dict[str, Any] = {}
    for key, value in items.items():
        if len(kept) == METADATA_KEYS_MAX:
            break
        key = key.replace("\x00", "")[:METADATA_KEY_MAX]
        if not key:
            continue
        if isinstance(value, str):
            value = value.replace("\x00", "\ufffd")[:METADATA_VALUE_MAX]
        if _scalar_ok(value):
            kept[key] = value
    return kept


def metadata_filter_parse(raw: str) -> dict[str, Any]:
    """`key:value` of ?metadata= as the containment it asks for; ValueError if malformed.

    The value matches a string value equal to it; a value that reads as an integer, a decimal
    number, `true` or `false` matches that number or boolean instead."""
    key, separator, value = raw.partition(":")
    if not separator or not key:
        raise ValueError("must be key:value (for example tier:gold)")
    if len(key) > METADATA_KEY_MAX or len(value) > METADATA_VALUE_MAX:
        raise ValueError(f"key at most {METADATA_KEY_MAX}, value at most {METADATA_VALUE_MAX}")
    typed: Any = value
    if value in ("true", "false"):
        typed = value == "true"
    else:
        try:
            typed = int(value)
        except ValueError:
            try:
                number = float(value)
                typed = number if number == number and abs(number) != float("inf") else value
            except ValueError:
                typed = value
    return {key: typed}
