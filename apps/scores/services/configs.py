"""Score configs: what a score of a name must be, per Agent (type, range or categories)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict, NotFound
from apps.scores.models import CATEGORY_MAX_LENGTH, NAME_MAX_LENGTH, DataType, ScoreConfig
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Agent

MAX_CATEGORIES = 50
CONFIG_CREATE_FIELDS = ("name", "data_type", "min_value", "max_value", "categories", "description")
CONFIG_UPDATE_FIELDS = ("min_value", "max_value", "categories", "description", "archived")


def _config_values(data: dict, *, data_type: str, current: ScoreConfig | None = None) -> dict:
    """min/max, categories and description checked for `data_type`; BadRequest names the rule."""
    values: dict[str, Any] = {}
    for name in ("min_value", "max_value"):
        if name in data:
            value = data[name]
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise BadRequest(f"{name}: must be a finite number or null.")
            values[name] = None if value is None else float(value)
    if "categories" in data:
        categories = data["categories"]
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            raise BadRequest("categories: must be an array of strings.")
        cleaned = [c.strip() for c in categories]
        if any(not c or len(c) > CATEGORY_MAX_LENGTH or "\x00" in c for c in cleaned):
            raise BadRequest(f"categories: each must be 1 to {CATEGORY_MAX_LENGTH} characters.")
        if len(set(cleaned)) != len(cleaned):
            raise BadRequest("categories: each category once.")
        if len(cleaned) > MAX_CATEGORIES:
            raise BadRequest(f"categories: at most {MAX_CATEGORIES}.")
        values["categories"] = cleaned
    if "description" in data:
        description = data["description"]
        if description is None:
            description = ""
        if not isinstance(description, str) or len(description) > 500:
            raise BadRequest("description: a string of at most 500 characters.")
        values["description"] = description.strip()
    low = values.get("min_value", current.min_value if current else None)
    high = values.get("max_value", current.max_value if current else None)
    categories = values.get("categories", current.categories if current else [])
    if data_type != DataType.NUMERIC and (low is not None or high is not None):
        raise BadRequest(
            f"min_value, max_value: only a numeric config has a range; this is {data_type}."
        )
    if low is not None and high is not None and low > high:
        raise BadRequest("min_value: must not be above max_value.")
    if data_type == DataType.CATEGORICAL and not categories:
        raise BadRequest("categories: a categorical config needs at least one category.")
    if data_type != DataType.CATEGORICAL and categories:
        raise BadRequest(
            f"categories: only a categorical config has categories; this is {data_type}."
        )
    return values


def _unknown(data: dict, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown field; allowed fields: {', '.join(allowed)}.")


def score_config_create(*, agent: Agent, data: Any) -> ScoreConfig:
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.")
    _unknown(data, CONFIG_CREATE_FIELDS)
    name = data.get("name")
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > NAME_MAX_LENGTH
        or "\x00" in name
    ):
        raise BadRequest(f"name: required, 1 to {NAME_MAX_LENGTH} characters.")
    data_type = data.get("data_type")
    if data_type not in DataType.values:
        raise BadRequest(f"data_type: required, one of: {', '.join(DataType.values)}.")
    values = _config_values(data, data_type=data_type)
    now = timezone.now()
    config = ScoreConfig(
        agent=agent,
        name=name.strip(),
        data_type=data_type,
        created_at=now,
        updated_at=now,
        **values,
    )
    try:
        with transaction.atomic():
            config.save(force_insert=True)
            audit_record(
                workspace_id=agent.workspace_id,
                agent_id=agent.pk,
                action="score_config.created",
                target_type="score_config",
                target_id=config.id,
                target_name=config.name,
                changes={"data_type": data_type, **values},
            )
    except IntegrityError:
        raise Conflict(
            f"name: the Agent already has a score config named {config.name!r}."
        ) from None
    return config


def score_config_get(*, agent: Agent, config_id: str) -> ScoreConfig:
    config = ScoreConfig.objects.filter(agent=agent, id=config_id[:40]).first()
    if config is None:
        raise NotFound(f"No score config {config_id!r} of this Agent.")
    return config


def score_config_update(*, agent: Agent, config_id: str, data: Any) -> ScoreConfig:
    """Range, categories, description and `archived` change; name and data type do not (the
    scores already given under the name keep their meaning)."""
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.")
    for fixed in ("name", "data_type"):
        if fixed in data:
            raise BadRequest(
                f"{fixed}: cannot change (scores were given under it); archive this config "
                "and create another."
            )
    _unknown(data, CONFIG_UPDATE_FIELDS)
    with transaction.atomic():
        config = score_config_get(agent=agent, config_id=config_id)
        config = ScoreConfig.objects.select_for_update().get(pk=config.pk)
        values = _config_values(data, data_type=config.data_type, current=config)
        if "archived" in data:
            if not isinstance(data["archived"], bool):
                raise BadRequest("archived: must be true or false.")
            if data["archived"] != config.archived:
                values["archived_at"] = timezone.now() if data["archived"] else None
        changes = {name: value for name, value in values.items() if getattr(config, name) != value}
        if not changes:
            return config
        for name, value in changes.items():
            setattr(config, name, value)
        config.updated_at = timezone.now()
        config.save(update_fields=[*changes, "updated_at"])
        action = "score_config.updated"
        if set(changes) == {"archived_at"}:
            action = "score_config.archived" if config.archived else "score_config.restored"
        audit_record(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            action=action,
            target_type="score_config",
            target_id=config.id,
            target_name=config.name,
            changes={
                k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in changes.items()
            },
        )
    return config


def score_config_archive(*, agent: Agent, config_id: str, archived: bool = True) -> ScoreConfig:
    return score_config_update(agent=agent, config_id=config_id, data={"archived": archived})
