"""The prefetch stage: the ids a batch names, loaded in one query per table (the rows it writes
locked, in id order, the rows it only references read plain), and the lookups of a row the
prefetch did not load (read on demand, locked when it will be written).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Q

from apps.activity.models import Conversation, EndUser, Message, Run, RunStep
from apps.activity.recording.batch import _MODELS, Batch
from apps.common.errors import BadRequest


@dataclass
class Wanted:
    """The ids a batch names, per table: written (locked) or only referenced."""

    locked: dict[type, set[str]]
    referenced: dict[type, set[str]]
    external_ids: set[str]

    @classmethod
    def empty(cls) -> Wanted:
        return cls(defaultdict(set), defaultdict(set), set())

    def lock(self, model: type, value: Any) -> None:
        if isinstance(value, str):
            self.locked[model].add(value)

    def refer(self, model: type, value: Any) -> None:
        if isinstance(value, str):
            self.referenced[model].add(value)


def wanted_of(records: Iterable[tuple[str, dict]]) -> Wanted:
    wanted = Wanted.empty()
    for kind, data in records:
        if kind == "user":
            wanted.lock(EndUser, data.get("id"))
            if isinstance(data.get("external_id"), str):
                wanted.external_ids.add(data["external_id"])
        elif kind == "conversation":
            wanted.lock(Conversation, data.get("id"))
            wanted.refer(EndUser, data.get("user_id"))
        elif kind == "message":
            wanted.lock(Message, data.get("id"))
            wanted.refer(Conversation, data.get("conversation_id"))
            wanted.refer(Run, data.get("run_id"))
        elif kind == "run":
            wanted.lock(Run, data.get("id"))
            wanted.refer(Conversation, data.get("conversation_id"))
            wanted.refer(EndUser, data.get("user_id"))
        elif kind == "step":
            wanted.lock(RunStep, data.get("id"))
            wanted.refer(RunStep, data.get("parent_id"))
            # The run's totals follow its steps: the run is written too.
            wanted.lock(Run, data.get("run_id"))
    return wanted


class BatchReads(Batch):
    """Reading the rows a batch needs: prefetched at once, or one at a time on demand."""

    def _objects(self, model: type) -> models.QuerySet:
        return model.objects.filter(agent=self.agent)  # type: ignore[attr-defined]

    def prefetch(self, wanted: Wanted) -> None:
        """Load the rows `wanted` names: one query per table for those written (locked), one
        for those only referenced."""
        for model in _MODELS:
            locked = wanted.locked.get(model, set()) - self.locked[model]
            condition = Q(id__in=sorted(locked)) if locked else None
            if model is EndUser and wanted.external_ids:
                by_external = Q(external_id__in=sorted(wanted.external_ids))
                condition = by_external if condition is None else condition | by_external
                for external_id in wanted.external_ids:
                    self.by_external.setdefault(external_id, None)
            if condition is not None:
                for row in (
                    self._objects(model).select_for_update().filter(condition).order_by("id")
                ):
                    self._keep(model, row, locked=True)
                for value in locked:
                    self.rows[model].setdefault(value, None)
                    self.locked[model].add(value)
            referenced = wanted.referenced.get(model, set()) - set(self.rows[model])
            if referenced:
                for row in self._objects(model).filter(id__in=referenced):
                    self._keep(model, row, locked=False)
                for value in referenced:
                    self.rows[model].setdefault(value, None)

    def _keep(self, model: type, row: Any, *, locked: bool) -> None:
        if row.id in self.rows[model] and self.rows[model][row.id] is not None:
            return
        self.rows[model][row.id] = row
        if locked:
            self.locked[model].add(row.id)
        if model is EndUser and row.external_id is not None:
            self.by_external[row.external_id] = row

    def get(self, model: type, record_id: str | None, *, lock: bool = False) -> Any:
        """The Agent's row with this id (None when there is none), from memory or the database.

        Ids are unique per Agent: another Agent's record with the same id is invisible here, so
        recording answers exactly as for an unused id (docs/faults.md, item 5)."""
        if record_id is None:
            return None
        known = record_id in self.rows[model]
        if known and (not lock or record_id in self.locked[model] or record_id in self.new[model]):
            return self.rows[model][record_id]
        query = self._objects(model).filter(id=record_id)
        row = (query.select_for_update() if lock else query).first()
        if known and self.rows[model][record_id] is not None:
            # Read plain before, locked now: keep the instance the batch already holds.
            self.locked[model].add(record_id)
            return self.rows[model][record_id]
        if row is not None:
            self.rows[model].pop(record_id, None)
            self._keep(model, row, locked=lock)
        else:
            self.rows[model][record_id] = None
        if lock:
            self.locked[model].add(record_id)
        return row

    def user_by_external_id(self, external_id: str) -> EndUser | None:
        if external_id not in self.by_external:
            row = self._objects(EndUser).select_for_update().filter(external_id=external_id).first()
            self.by_external[external_id] = row
            if row is not None:
                self._keep(EndUser, row, locked=True)
        return self.by_external[external_id]

    def _user_of(self, user_id: str | None, *, label: str) -> EndUser | None:
        if user_id is None:
            return None
        user = self.get(EndUser, user_id)
        if user is None:
            raise BadRequest(f"{label}.user_id: no user {user_id!r} recorded for this Agent.")
        return user

    def _conversation_of(self, conversation_id: str, *, label: str) -> Conversation:
        conversation = self.get(Conversation, conversation_id)
        if conversation is None:
            raise BadRequest(
                f"{label}.conversation_id: no conversation {conversation_id!r} recorded for "
                "this Agent."
            )
        return conversation
