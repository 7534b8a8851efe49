"""Scores and score configs as the API shows them (and webhooks' `score.created` data)."""

from collections.abc import Mapping
from typing import Any

from apps.common.time import iso
from apps.scores.models import DataType, Score, ScoreConfig, Source

SCORE_FIELDS = (
    "id", "target_type", "run_id", "step_id", "conversation_id", "message_id", "name",
    "data_type", "value", "comment", "source", "author_type", "author_id", "created_at",
    "updated_at",
)  # fmt: skip
SCORE_CONFIG_FIELDS = (
    "id", "name", "data_type", "min_value", "max_value", "categories", "description",
    "archived", "created_at", "updated_at",
)  # fmt: skip


# A score's columns, by attribute name, that its answer reads.
ROW_ATTRIBUTES = (
    "id", "target_type", "run_id", "step_id", "conversation_id", "message_id", "name",
    "data_type", "number_value", "string_value", "boolean_value", "comment", "source",
    "api_key_id", "end_user_id", "created_by_id", "created_at", "updated_at",
)  # fmt: skip
_VALUE_COLUMN = {
    DataType.NUMERIC: "number_value",
    DataType.CATEGORICAL: "string_value",
    DataType.BOOLEAN: "boolean_value",
}


def author_of(row: Mapping[str, Any]) -> tuple[str, str | None]:
    """Who gave the score: ("api_key", key id), ("end_user", user id) or ("member", user id)."""
    if row["source"] == Source.END_USER:
        return "end_user", row["end_user_id"]
    if row["source"] == Source.CONSOLE:
        return "member", str(row["created_by_id"]) if row["created_by_id"] else None
    return "api_key", row["api_key_id"]


def score_row_to_dict(row: Mapping[str, Any]) -> dict:
    """A score's answer from its column values (a new score's, before any model exists)."""
    author_type, author_id = author_of(row)
    updated_at = iso(row["updated_at"])
    return {
        "object": "score",
        "id": row["id"],
        "target_type": row["target_type"],
        "run_id": row["run_id"],
        "step_id": row["step_id"],
        "conversation_id": row["conversation_id"],
        "message_id": row["message_id"],
        "name": row["name"],
        "data_type": row["data_type"],
        "value": row[_VALUE_COLUMN[row["data_type"]]],
        "comment": row["comment"],
        "source": row["source"],
        "author_type": author_type,
        "author_id": author_id,
        # A new score's two times are one: format it once.
        "created_at": updated_at
        if row["created_at"] is row["updated_at"]
        else iso(row["created_at"]),
        "updated_at": updated_at,
    }


def score_to_dict(score: Score) -> dict:
    return score_row_to_dict({name: getattr(score, name) for name in ROW_ATTRIBUTES})


def score_config_to_dict(config: ScoreConfig) -> dict:
    return {
        "object": "score_config",
        "id": config.id,
        "name": config.name,
        "data_type": config.data_type,
        "min_value": config.min_value,
        "max_value": config.max_value,
        "categories": list(config.categories or []),
        "description": config.description,
        "archived": config.archived,
        "created_at": iso(config.created_at),
        "updated_at": iso(config.updated_at),
    }
