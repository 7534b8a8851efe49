"""What one batch of records holds while it is recorded: the rows it read or made, which of them
are new and which changed (and how), and the helpers every kind of record applies its fields
with. The stages build on it: `reading` (prefetch and lookups), the records of each kind
(`conversations`, `runs`, `steps`), and `writing` (the flush's statements).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models
from django.utils import timezone

from apps.activity.models import Conversation, EndUser, Message, Run, RunStep
from apps.common.errors import BadRequest
from apps.workspaces.models import Agent

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"
_MODELS: tuple[type[models.Model], ...] = (EndUser, Conversation, Message, RunStep, Run)


def _apply(row: models.Model, data: dict, names: Iterable[str]) -> list[str]:
    changed = []
    for name in names:
        if name in data and getattr(row, name) != data[name]:
            setattr(row, name, data[name])
            changed.append(name)
    return changed


def _apply_search(row: models.Model, fields: dict) -> list[str]:
    """Set a row's word search fields (apps.activity.search_index); the names of those set."""
    for name, value in fields.items():
        setattr(row, name, value)
    return list(fields)


def _require(data: dict, names: Iterable[str], *, label: str, kind: str) -> None:
    for name in names:
        if name not in data:
            raise BadRequest(f"{label}.{name}: required when recording a new {kind}.")


class Batch:
    """The rows of one batch of records for one Agent, as the batch has them in memory."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.now = timezone.now()
        self.rows: dict[type, dict[str, Any]] = {model: {} for model in _MODELS}
        self.locked: dict[type, set[str]] = {model: set() for model in _MODELS}
        self.new: dict[type, dict[str, str]] = {model: {} for model in _MODELS}  # id -> label
        self.dirty: dict[type, dict[str, set[str]]] = {model: {} for model in _MODELS}
        self.by_external: dict[str, EndUser | None] = {}
        # Runs as they were before this batch (None: created by it), in the order first touched.
        self.run_before: dict[str, dict[str, Any] | None] = {}
        self.changed_runs: set[str] = set()
        self.stepped: set[str] = set()
        # run id -> {total: (value stated by a run record, that record's label)}
        self.stated: dict[str, dict[str, tuple[Any, str]]] = {}
        # Steps as they were before this batch changed them, for the analytics rollup.
        self.step_before: dict[str, dict[str, Any]] = {}

    def _create(self, model: type, row: Any, *, label: str) -> None:
        if row.id in self.rows[model] and self.rows[model][row.id] is not None:
            raise BadRequest(
                f"{label}.id: {row.id!r} was recorded concurrently or clashes with another "
                "record; send the record again."
            )
        self.rows[model][row.id] = row
        self.new[model][row.id] = label

    def _changed(self, model: type, row: Any, names: Iterable[str]) -> None:
        if row.id not in self.new[model]:
            self.dirty[model].setdefault(row.id, set()).update(names)

    def _stamp_updated_at(self, row: Any, data: dict, changed: list[str]) -> None:
        """Take the record's `updated_at` if it has one, else stamp now when anything changed."""
        if "updated_at" in data:
            changed += _apply(row, data, ("updated_at",))
        elif changed:
            row.updated_at = self.now
            changed.append("updated_at")
