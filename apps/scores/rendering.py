"""Scores and score configs as the API shows them (and webhooks' `score.created` data)."""

from apps.common.time import iso
from apps.scores.models import Score, ScoreConfig, Source

SCORE_FIELDS = (
    "id", "target_type", "run_id", "step_id", "conversation_id", "message_id", "name",
    "data_type", "value", "comment", "source", "author_type", "author_id", "created_at",
    "updated_at",
)  # fmt: skip
SCORE_CONFIG_FIELDS = (
    "id", "name", "data_type", "min_value", "max_value", "categories", "description",
    "archived", "created_at", "updated_at",
)  # fmt: skip


def author_of(score: Score) -> tuple[str, str | None]:
    """Who gave the score: ("api_key", key id), ("end_user", user id) or ("member", user id)."""
    if score.source == Source.END_USER:
        return "end_user", score.end_user_id
    if score.source == Source.CONSOLE:
        return "member", str(score.created_by_id) if score.created_by_id else None
    return "api_key", score.api_key_id


def score_to_dict(score: Score) -> dict:
    author_type, author_id = author_of(score)
    return {
        "object": "score",
        "id": score.id,
        "target_type": score.target_type,
        "run_id": score.run_id,
        "step_id": score.step_id,
        "conversation_id": score.conversation_id,
        "message_id": score.message_id,
        "name": score.name,
        "data_type": score.data_type,
        "value": score.value,
        "comment": score.comment,
        "source": score.source,
        "author_type": author_type,
        "author_id": author_id,
        "created_at": iso(score.created_at),
        "updated_at": iso(score.updated_at),
    }


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
