"""Scores as asked for: each item's shape, and its value against its data type and config.

A batch is checked whole before anything is written: every invalid item is named
(`scores[3].value: ...`) and the 400 keeps none of them (apps.scores.services.writing).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.api.serializers import StrictDateTimeField
from apps.common.errors import BadRequest
from apps.scores.models import (
    CATEGORY_MAX_LENGTH,
    COMMENT_MAX_LENGTH,
    ID_MAX_LENGTH,
    NAME_MAX_LENGTH,
    DataType,
    ScoreConfig,
    TargetType,
)

MAX_BATCH = 1000
# At most this many item errors are named in one 400 (the count says how many there were).
MAX_ERRORS_NAMED = 20

TARGET_FIELDS = {
    "run_id": TargetType.RUN,
    "step_id": TargetType.RUN_STEP,
    "conversation_id": TargetType.CONVERSATION,
    "message_id": TargetType.MESSAGE,
}
INPUT_FIELDS = (*TARGET_FIELDS, "id", "name", "value", "data_type", "comment", "created_at")
_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:\-]+$")


def label_order(error: str) -> tuple[int, str]:
    """Errors in the order of their items (`scores[12]` after `scores[3]`)."""
    match = re.match(r"^\w+\[(\d+)\]", error)
    return (int(match.group(1)) if match else -1, error)


class ItemError(Exception):
    """One item's problem, named `label.field: message`; collected into the batch's 400."""


@dataclass
class ScoreIn:
    """One score as asked for, checked for shape (not yet against targets and configs)."""

    label: str
    id: str | None
    target_type: str
    target_id: str
    name: str
    value: float | str | bool
    data_type: str | None
    comment: str | None
    created_at: datetime | None = None
    # Filled while resolving.
    run_id: str | None = None
    step_id: str | None = None
    conversation_id: str | None = None
    message_id: str | None = None


def _text(label: str, name: str, value: Any, *, max_length: int, allow_null: bool = False):
    if value is None and allow_null:
        return None
    if not isinstance(value, str):
        raise ItemError(f"{label}.{name}: must be a JSON string.")
    if "\x00" in value:
        raise ItemError(f"{label}.{name}: must not contain NUL characters.")
    if len(value) > max_length:
        raise ItemError(f"{label}.{name}: at most {max_length} characters.")
    return value


def _an_id(label: str, name: str, value: Any) -> str:
    value = _text(label, name, value, max_length=ID_MAX_LENGTH)
    if not value or not _ID_PATTERN.match(value):
        raise ItemError(f"{label}.{name}: must be 1 to {ID_MAX_LENGTH} letters, digits or _ . : -")
    return value


def score_input_parse(item: Any, label: str) -> ScoreIn:
    """One raw score (a JSON object), checked for shape; ItemError names the field."""
    if not isinstance(item, dict):
        raise ItemError(f"{label}: must be a JSON object.")
    unknown = sorted(set(item) - set(INPUT_FIELDS))
    if unknown:
        raise ItemError(
            f"{label}.{unknown[0]}: unknown field; allowed fields: {', '.join(INPUT_FIELDS)}."
        )
    targets = [name for name in TARGET_FIELDS if item.get(name) is not None]
    if len(targets) != 1:
        given = f"got {', '.join(targets)}" if targets else "got none"
        raise ItemError(
            f"{label}: name exactly one target: run_id, step_id, conversation_id or "
            f"message_id ({given})."
        )
    target_field = targets[0]
    target_id = _an_id(label, target_field, item[target_field])
    score_id = _an_id(label, "id", item["id"]) if item.get("id") is not None else None
    if "name" not in item:
        raise ItemError(f"{label}.name: required.")
    name = _text(label, "name", item["name"], max_length=NAME_MAX_LENGTH).strip()
    if not name:
        raise ItemError(f"{label}.name: must not be blank.")
    if "value" not in item or item["value"] is None:
        raise ItemError(f"{label}.value: required (a number, a category string or a boolean).")
    value = item["value"]
    data_type = item.get("data_type")
    if data_type is not None and data_type not in DataType.values:
        raise ItemError(f"{label}.data_type: must be one of: {', '.join(DataType.values)}.")
    if isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) > 1e300:
            raise ItemError(f"{label}.value: must be a finite number.")
        value = float(value)
    elif isinstance(value, str):
        value = _text(label, "value", value, max_length=CATEGORY_MAX_LENGTH)
        if not value.strip():
            raise ItemError(f"{label}.value: a category must not be blank.")
    else:
        raise ItemError(f"{label}.value: must be a number, a category string or a boolean.")
    comment = _text(
        label, "comment", item.get("comment"), max_length=COMMENT_MAX_LENGTH, allow_null=True
    )
    created_at = None
    if item.get("created_at") is not None:
        try:
            created_at = StrictDateTimeField().to_internal_value(item["created_at"])
        except Exception as exc:  # DRF's ValidationError: its first message
            detail = getattr(exc, "detail", [str(exc)])
            raise ItemError(f"{label}.created_at: {detail[0]}") from None
    return ScoreIn(
        label=label,
        id=score_id,
        target_type=TARGET_FIELDS[target_field],
        target_id=target_id,
        name=name,
        value=value,
        data_type=data_type,
        comment=comment or None,
        created_at=created_at,
    )


def _type_of(value: float | str | bool) -> str:
    if isinstance(value, bool):
        return DataType.BOOLEAN
    if isinstance(value, float):
        return DataType.NUMERIC
    return DataType.CATEGORICAL


def _number_text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def check_value(score: ScoreIn, config: ScoreConfig | None) -> None:
    """The value against its data type and, when its name has an active config, the config."""
    label, value = score.label, score.value
    actual = _type_of(value)
    wanted = score.data_type or (config.data_type if config else actual)
    if config is not None and wanted != config.data_type:
        raise ItemError(
            f"{label}.data_type: score config '{config.name}' says {config.data_type}; "
            f"got {wanted}."
        )
    if wanted != actual:
        examples = {
            DataType.NUMERIC: "a number",
            DataType.CATEGORICAL: "a category string",
            DataType.BOOLEAN: "true or false",
        }
        if config is not None:
            raise ItemError(
                f"{label}.value: score config '{config.name}' says {wanted}: "
                f"{examples[DataType(wanted)]}; got {examples[DataType(actual)]}."
            )
        raise ItemError(f"{label}.value: a {wanted} score's value is {examples[DataType(wanted)]}.")
    score.data_type = wanted
    if config is None:
        return
    rule = f"score config '{config.name}'"
    if wanted == DataType.NUMERIC:
        assert isinstance(value, float)
        if config.min_value is not None and value < config.min_value:
            raise ItemError(
                f"{label}.value: {rule} allows {_number_text(config.min_value)} to "
                f"{_number_text(config.max_value) or 'any'}; {value:g} is below the minimum."
            )
        if config.max_value is not None and value > config.max_value:
            raise ItemError(
                f"{label}.value: {rule} allows {_number_text(config.min_value) or 'any'} to "
                f"{_number_text(config.max_value)}; {value:g} is above the maximum."
            )
    elif wanted == DataType.CATEGORICAL and value not in config.categories:
        raise ItemError(
            f"{label}.value: {rule} allows the categories {', '.join(config.categories)}; "
            f"got {value!r}."
        )


def raise_collected(errors: list[str], total: int) -> None:
    if not errors:
        return
    named = "; ".join(error.rstrip(".") for error in errors[:MAX_ERRORS_NAMED])
    more = f" (and {len(errors) - MAX_ERRORS_NAMED} more)" if len(errors) > MAX_ERRORS_NAMED else ""
    if total == 1:
        raise BadRequest(f"{named}.")
    raise BadRequest(
        f"{len(errors)} of {total} scores are invalid; nothing was recorded: {named}{more}."
    )


@dataclass
class ScoreBatch:
    """A body's scores checked for shape, and the problems of those that are not."""

    scores: list[ScoreIn]
    errors: list[str]
    total: int
    single: bool


def scores_parse(items: Any, *, label: str = "scores") -> ScoreBatch:
    """A body of one score (object) or a batch (array of 1 to 1,000), every item's shape
    checked and each problem kept (scores_create names them all with the others)."""
    single = isinstance(items, dict)
    raw = [items] if single else items
    if not isinstance(raw, list):
        raise BadRequest("The body must be a score (JSON object) or an array of scores.")
    if not raw:
        raise BadRequest("The array must hold at least one score.")
    if len(raw) > MAX_BATCH:
        raise BadRequest(f"At most {MAX_BATCH} scores per request; got {len(raw)}.")
    parsed, errors = [], []
    for index, item in enumerate(raw):
        try:
            parsed.append(score_input_parse(item, "score" if single else f"{label}[{index}]"))
        except ItemError as exc:
            errors.append(str(exc))
    return ScoreBatch(scores=parsed, errors=errors, total=len(raw), single=single)
