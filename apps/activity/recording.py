"""The set-based engine behind every activity write (apps.activity.services' rules).

A `Unit` records a batch of records for one Agent with a bounded number of statements whatever
the batch's size:

1. `prefetch` loads every row the records name, in one query per table: the rows they write
   locked (`SELECT ... FOR UPDATE`, in id order so two batches lock in the same order), the
   rows they only reference (a message's conversation, a step's parent) read plain.
2. `record` applies each record, in order, to those rows in memory, with the same checks as
   one record at a time would (a reference to a row created earlier in the batch counts).
   A row the prefetch did not load (a grandparent step, a lookup by a caller) is read on demand.
3. `flush` writes what changed: one COPY of the new rows per table (a concurrent insert of
   the same id fails the batch with a 400 naming the record), one upsert on the row key
   of the changed rows per table, then brings the runs in line with their steps (three grouped
   queries), writes the runs, and announces the runs recorded as one batch (usage adds one
   increment per Agent and day; webhooks records the ended runs' deliveries).

The composite foreign keys between the tables are deferred to commit (migrations 0003, 0006),
so the tables are written in whatever order suits the batch.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from django.db import IntegrityError, connection, models
from django.db.models import Count, Q, Sum
from django.utils import timezone
from psycopg.types.json import Jsonb

from apps.activity import analytics
from apps.activity.bounds import bounded_attributes, bounded_documents, bounded_json, bounded_text
from apps.activity.events import RunRecorded, announce_runs_recorded
from apps.activity.models import (
    END_STATES,
    Conversation,
    EndUser,
    Message,
    Run,
    RunStatus,
    RunStep,
    StepKind,
    StepStatus,
)
from apps.activity.search_index import (
    STEP_SOURCES,
    message_search_fields,
    step_search_fields,
    step_sources_changed,
)
from apps.common.errors import BadRequest
from apps.workspaces.models import Agent

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"

# The run totals that its model steps may carry (see apps.activity.services).
STEP_TOTALS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "credits_charged",
)
_USER_FIELDS = ("external_id", "identity_type", "display_name", "email", "avatar_url")
_CONVERSATION_FIELDS = ("title", "status", "source")
_MESSAGE_FIELDS = ("role", "parts", "source_id", "run_id", "created_at", "updated_at")
_RUN_FIELDS = (
    "request_id", "model_id", "effort", "sdk_version", "protocol_version", *STEP_TOTALS,
    "tool_names", "failed_tool_names", "component_kinds", "error_code", "first_chunk_at",
    "completed_at", "total_turn_latency_ms", "created_at",
    "environment", "release", "tags", "metadata",
)  # fmt: skip
_RUN_STATE = (*_RUN_FIELDS, "user_id", "status", "conversation_id")
_STEP_FIELDS = (
    "parent_id", "kind", "name", "status", "error", "started_at", "ended_at", "duration_ms",
    "input", "output", "model_id", *STEP_TOTALS, "first_token_ms", "finish_reason", "tool_name",
    "mcp_server", "query", "documents", "attributes",
)  # fmt: skip
# Ancestors walked to refuse a parent cycle; deeper trees than this are refused as well.
MAX_STEP_DEPTH = 1000
_BOUNDED = ("input", "output", "error", "query", "documents", "attributes")
_MODELS: tuple[type[models.Model], ...] = (EndUser, Conversation, Message, RunStep, Run)


# PostgreSQL's detail of a unique violation on an Agent's id or external id.
_CLASH = re.compile(r"^Key \(agent_id, (id|external_id)\)=\([^,]*, (.*)\) already exists")


def step_bounded(data: dict) -> tuple[dict, list[str]]:
    """The step fields with large values shortened, and the names of those shortened."""
    data = dict(data)
    truncated: list[str] = []
    for name in ("input", "output"):
        if name in data:
            data[name], cut = bounded_json(data[name])
            if cut:
                truncated.append(name)
    for name in ("error", "query"):
        if name in data:
            data[name], cut = bounded_text(data[name])
            if cut:
                truncated.append(name)
    if "documents" in data:
        data["documents"], cut = bounded_documents(data["documents"])
        if cut:
            truncated.append("documents")
    if "attributes" in data:
        data["attributes"], cut_names = bounded_attributes(data["attributes"])
        truncated += cut_names
    if "name" in data:
        data["name"] = data["name"][:255]
    return data, truncated


def _truncated_after(previous: list[str], data: dict, cut: list[str]) -> list[str]:
    """A step's `truncated` once `data` replaced some fields: marks of replaced fields go."""
    kept = [
        name
        for name in previous
        if name.split(".", 1)[0] not in data or name.split(".", 1)[0] not in _BOUNDED
    ]
    return kept + [name for name in cut if name not in kept]


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


def _json_text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


_DEFAULT = object()  # a column the values leave out: its field's default
_COPY_LAYOUTS: dict[type, tuple[str, list[tuple[str, Any]], list[tuple[int, Any]], list]] = {}


def _copy_layout(model: type[models.Model]) -> tuple[str, list, list, list]:
    """(the COPY statement, (attribute name, default) per column with `_DEFAULT` for a default
    that is made per row, those columns' (index, default maker), the JSON columns' (index, JSON
    text of the default or None)); made once per model."""
    layout = _COPY_LAYOUTS.get(model)
    if layout is None:
        fields = [field for field in model._meta.concrete_fields if not field.primary_key]
        columns = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
        plain, made, json_columns = [], [], []
        for index, field in enumerate(fields):
            if isinstance(field, models.JSONField):
                default = field.get_default()
                text = None if default is None else _json_text(default)
                json_columns.append((index, text))
                plain.append((field.attname, _DEFAULT))
            elif field.has_default() and callable(field.default):
                made.append((index, field.get_default))
                plain.append((field.attname, _DEFAULT))
            else:
                plain.append((field.attname, field.get_default()))
        layout = _COPY_LAYOUTS[model] = (
            f"COPY {model._meta.db_table} ({columns}) FROM STDIN",
            plain,
            made,
            json_columns,
        )
    return layout


def rows_insert(model: type[models.Model], rows: list) -> None:
    """Insert new rows (their row key left to the database). On PostgreSQL one `COPY`, whose
    values psycopg writes in C: Django's per-field preparation of a bulk INSERT cost more than
    the database's work for a batch of a thousand steps. Unique and foreign keys apply as for
    an INSERT. Elsewhere (SQLite), `bulk_create`."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create(rows, batch_size=500)  # type: ignore[attr-defined]
        return
    statement, plain, _made, json_columns = _copy_layout(model)
    names = [name for name, _default in plain]
    json_fields = [index for index, _default_text in json_columns]
    # Django's error classes (IntegrityError, ...) for what psycopg's own cursor raises.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor  # psycopg's own cursor, under Django's wrapper
        with raw.copy(statement) as copy:
            for row in rows:
                values = [getattr(row, name) for name in names]
                for index in json_fields:
                    if values[index] is not None:
                        values[index] = Jsonb(values[index], dumps=_json_text)
                copy.write_row(values)


def values_insert(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """Insert new rows given as dicts by attribute name (`agent_id`, not `agent`; every other
    field its default): `rows_insert`'s COPY without a model instance per row, each row a list
    in the COPY's column order and each JSON value its JSON text (`_json_text`, the text
    `rows_insert`'s `Jsonb` writes). A thousand OTLP steps a request: the instances and the
    per-value adapters cost more than the COPY. Elsewhere (SQLite), `rows_insert`'s
    `bulk_create` of `new_row` instances."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        rows_insert(model, [new_row(model, values) for values in rows])
        return
    statement, plain, made, json_columns = _copy_layout(model)
    dumps = _json_text
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor  # psycopg's own cursor, under Django's wrapper
        with raw.copy(statement) as copy:
            for values in rows:
                get = values.get
                row = [get(name, default) for name, default in plain]
                for index, maker in made:
                    if row[index] is _DEFAULT:
                        row[index] = maker()
                for index, text in json_columns:
                    value = row[index]
                    if value is _DEFAULT:
                        row[index] = text
                    elif value is not None:
                        row[index] = dumps(value)
                copy.write_row(row)


_ROW_DEFAULTS: dict[type, list[tuple[str, Any]]] = {}


def new_row(model: type[models.Model], values: dict[str, Any]) -> Any:
    """An instance of a new row: `values` by attribute name (`agent_id`, not `agent`), every
    other field its default. Built positionally, a fifth of the time of Django's keyword
    constructor, which looks up each missing field's default (and makes an id that `values`
    then replaces): a thousand steps a request."""
    defaults = _ROW_DEFAULTS.get(model)
    if defaults is None:
        defaults = _ROW_DEFAULTS[model] = [
            (field.attname, field._get_default)  # type: ignore[attr-defined]
            for field in model._meta.concrete_fields
        ]
    return model(*[values[name] if name in values else default() for name, default in defaults])


def _same_total(stated: Any, total: Any) -> bool:
    if stated is None or total is None:
        return stated is total
    return abs(float(stated) - float(total)) <= 1e-9 * max(1.0, abs(float(total)))


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


class Unit:
    """One batch of records for one Agent (module docstring)."""

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

    # --- reading rows --------------------------------------------------------------------------

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

    # --- writing rows in memory ----------------------------------------------------------------

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

    def record(self, kind: str, data: dict, label: str) -> str:
        return getattr(self, f"_{kind}")(data, label)

    def _user(self, data: dict, label: str) -> str:
        user = self.get(EndUser, data.get("id"), lock=True)
        external_id = data.get("external_id")
        if external_id is not None:
            holder = self.user_by_external_id(external_id)
            if holder is not None and "id" in data and holder.id != data["id"]:
                raise BadRequest(
                    f"{label}.external_id: already recorded for user {holder.id!r}, "
                    f"not {data['id']!r}."
                )
            user = user or holder
        if user is None:
            last_seen = data.get("last_seen_at") or self.now
            user = EndUser(
                agent=self.agent,
                first_seen_at=min(data.get("first_seen_at") or last_seen, last_seen),
                last_seen_at=last_seen,
            )
            if "id" in data:
                user.id = data["id"]
            _apply(user, data, _USER_FIELDS)
            self._create(EndUser, user, label=label)
            if user.external_id is not None:
                self.by_external[user.external_id] = user
            return CREATED
        previous_external = user.external_id
        changed = _apply(user, data, _USER_FIELDS)
        seen = data.get("last_seen_at")
        if seen is not None and seen > user.last_seen_at:
            user.last_seen_at = seen
            changed.append("last_seen_at")
        # A sighting earlier than the first one known moves first_seen_at back.
        sightings = [data[name] for name in ("first_seen_at", "last_seen_at") if data.get(name)]
        first = min(sightings) if sightings else None
        if first is not None and first < user.first_seen_at:
            user.first_seen_at = first
            changed.append("first_seen_at")
        if not changed:
            return UNCHANGED
        if "external_id" in changed:
            if user.external_id is not None:
                holder = self.user_by_external_id(user.external_id)
                if holder is not None and holder is not user:
                    raise BadRequest(f"{label}.external_id: already recorded for another user.")
                self.by_external[user.external_id] = user
            if previous_external is not None:
                self.by_external[previous_external] = None
        self._changed(EndUser, user, changed)
        return UPDATED

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

    def _stamp_updated_at(self, row: Any, data: dict, changed: list[str]) -> None:
        """Take the record's `updated_at` if it has one, else stamp now when anything changed."""
        if "updated_at" in data:
            changed += _apply(row, data, ("updated_at",))
        elif changed:
            row.updated_at = self.now
            changed.append("updated_at")

    def _conversation(self, data: dict, label: str) -> str:
        conversation = self.get(Conversation, data.get("id"), lock=True)
        if "user_id" in data:
            self._user_of(data["user_id"], label=label)
        if conversation is None:
            created_at = data.get("created_at") or self.now
            conversation = Conversation(
                agent=self.agent,
                created_at=created_at,
                updated_at=data.get("updated_at") or created_at,
            )
            if "id" in data:
                conversation.id = data["id"]
            _apply(conversation, data, (*_CONVERSATION_FIELDS, "user_id"))
            self._create(Conversation, conversation, label=label)
            return CREATED
        changed = _apply(conversation, data, (*_CONVERSATION_FIELDS, "user_id", "created_at"))
        self._stamp_updated_at(conversation, data, changed)
        if not changed:
            return UNCHANGED
        self._changed(Conversation, conversation, changed)
        return UPDATED

    def _message_run_check(self, data: dict, conversation_id: str, *, label: str) -> None:
        """A message's run must be a run of the Agent in the message's own conversation."""
        run_id = data.get("run_id")
        if run_id is None:
            return
        run = self.get(Run, run_id)
        if run is None:
            raise BadRequest(f"{label}.run_id: no run {run_id!r} recorded for this Agent.")
        if run.conversation_id != conversation_id:
            raise BadRequest(
                f"{label}.run_id: run {run_id!r} belongs to conversation "
                f"{run.conversation_id!r}, not {conversation_id!r}."
            )

    def _message(self, data: dict, label: str) -> str:
        message = self.get(Message, data.get("id"), lock=True)
        if message is None:
            _require(data, ("conversation_id", "role"), label=label, kind="message")
            conversation = self._conversation_of(data["conversation_id"], label=label)
            message = Message(
                agent=self.agent,
                conversation_id=conversation.id,
                parts=[],
                created_at=data.get("created_at") or self.now,
            )
            if "id" in data:
                message.id = data["id"]
            self._message_run_check(data, conversation.id, label=label)
            _apply(message, data, _MESSAGE_FIELDS)
            _apply_search(message, message_search_fields(message.parts))
            self._create(Message, message, label=label)
            return CREATED
        if "conversation_id" in data and data["conversation_id"] != message.conversation_id:
            raise BadRequest(
                f"{label}.conversation_id: message {message.id!r} belongs to conversation "
                f"{message.conversation_id!r} and cannot move."
            )
        self._message_run_check(data, message.conversation_id, label=label)
        changed = _apply(message, data, _MESSAGE_FIELDS)
        if not changed:
            return UNCHANGED
        if "parts" in changed:
            changed += _apply_search(message, message_search_fields(message.parts))
        self._changed(Message, message, changed)
        return UPDATED

    def _run_touch(self, run: Run) -> None:
        """Remember the run as it was before this batch (once), for the announcement."""
        if run.id not in self.run_before:
            self.run_before[run.id] = {name: getattr(run, name) for name in _RUN_STATE}

    def _run(self, data: dict, label: str) -> str:
        run = self.get(Run, data.get("id"), lock=True)
        stated = {name: (data[name], label) for name in STEP_TOTALS if name in data}
        if stated:
            run_id = run.id if run is not None else data.get("id")
            if run_id is not None:
                self.stated.setdefault(run_id, {}).update(stated)
        if "user_id" in data:
            self._user_of(data["user_id"], label=label)
        if run is None:
            _require(
                data, ("conversation_id", "request_id", "sdk_version"), label=label, kind="run"
            )
            conversation = self._conversation_of(data["conversation_id"], label=label)
            created_at = data.get("created_at") or self.now
            run = Run(
                agent=self.agent,
                conversation_id=conversation.id,
                user_id=conversation.user_id,
                status=data.get("status", RunStatus.STREAMING),
                created_at=created_at,
                updated_at=data.get("updated_at") or created_at,
            )
            if "id" in data:
                run.id = data["id"]
            _apply(run, data, (*_RUN_FIELDS, "user_id"))
            self._create(Run, run, label=label)
            self.run_before[run.id] = None
            self.changed_runs.add(run.id)
            return CREATED
        if "conversation_id" in data and data["conversation_id"] != run.conversation_id:
            raise BadRequest(
                f"{label}.conversation_id: run {run.id!r} belongs to conversation "
                f"{run.conversation_id!r} and cannot move."
            )
        new_status = data.get("status", run.status)
        if new_status != run.status and run.status in END_STATES:
            raise BadRequest(
                f"{label}.status: run {run.id!r} already ended as {run.status!r}; an ended "
                f"run cannot become {new_status!r}."
            )
        self._run_touch(run)
        changed = _apply(run, data, _RUN_STATE)
        self._stamp_updated_at(run, data, changed)
        if not changed:
            return UNCHANGED
        self._changed(Run, run, changed)
        self.changed_runs.add(run.id)
        return UPDATED

    def _parent_check(self, *, step_id: str, run_id: str, parent_id: str, label: str) -> None:
        """The parent is a step of the same run, and the step is not among its ancestors."""
        current: str | None = parent_id
        for _depth in range(MAX_STEP_DEPTH):
            if current is None:
                return
            if current == step_id:
                raise BadRequest(f"{label}.parent_id: {parent_id!r} would make a cycle of steps.")
            parent = self.get(RunStep, current)
            if parent is None or parent.run_id != run_id:
                raise BadRequest(
                    f"{label}.parent_id: no step {current!r} recorded for run {run_id!r}."
                )
            current = parent.parent_id
        raise BadRequest(f"{label}.parent_id: steps nest deeper than {MAX_STEP_DEPTH} levels.")

    def _step_validate(self, step: RunStep, data: dict, *, label: str) -> None:
        if step.ended_at is not None and step.ended_at < step.started_at:
            raise BadRequest(f"{label}.ended_at: earlier than started_at.")
        if "duration_ms" not in data and step.ended_at is not None:
            step.duration_ms = (step.ended_at - step.started_at).total_seconds() * 1000
        if step.parent_id is not None and "parent_id" in data:
            self._parent_check(
                step_id=step.id, run_id=step.run_id, parent_id=step.parent_id, label=label
            )

    def _step(self, data: dict, label: str) -> str:
        step = self.get(RunStep, data.get("id"), lock=True)
        data, cut = step_bounded(data)
        if step is None:
            _require(data, ("run_id", "name"), label=label, kind="step")
            if self.get(Run, data["run_id"]) is None:
                raise BadRequest(
                    f"{label}.run_id: no run {data['run_id']!r} recorded for this Agent."
                )
            step = new_row(
                RunStep,
                {
                    **{name: data[name] for name in ("id", *_STEP_FIELDS) if name in data},
                    "agent_id": self.agent.pk,
                    "run_id": data["run_id"],
                    "created_at": self.now,
                    "updated_at": self.now,
                    "started_at": data.get("started_at") or self.now,
                    "truncated": cut,
                    **step_search_fields(data),
                },
            )
            self._step_validate(step, data, label=label)
            self._create(RunStep, step, label=label)
            outcome = CREATED
        else:
            if "run_id" in data and data["run_id"] != step.run_id:
                raise BadRequest(
                    f"{label}.run_id: step {step.id!r} belongs to run {step.run_id!r} and "
                    "cannot move."
                )
            data["truncated"] = _truncated_after(step.truncated, data, cut)
            if step.id not in self.step_before and step.id not in self.new[RunStep]:
                self.step_before[step.id] = analytics.step_values(step)
            changed = _apply(step, data, (*_STEP_FIELDS, "truncated"))
            if not changed:
                return UNCHANGED
            if step_sources_changed(changed):
                sources = {name: getattr(step, name) for name in STEP_SOURCES}
                changed += _apply_search(step, step_search_fields(sources))
            self._step_validate(step, data, label=label)
            step.updated_at = self.now
            self._changed(RunStep, step, [*changed, "duration_ms", "updated_at"])
            outcome = UPDATED
        self.stepped.add(step.run_id)
        return outcome

    # --- writing to the database -------------------------------------------------------------

    def flush(self) -> None:
        """Write the batch (module docstring); call inside the recording transaction."""
        for model in (EndUser, Conversation, Message, RunStep):
            self._write(model)
        self._reconcile()
        self._write(Run)
        events = []
        for run_id, before in self.run_before.items():
            if run_id not in self.changed_runs:
                continue
            run = self.rows[Run][run_id]
            was_ended = before is not None and before["status"] in END_STATES
            events.append(
                RunRecorded(
                    run=run, previous=before, ended=run.status in END_STATES and not was_ended
                )
            )
        self._rollup(events)
        if events:
            announce_runs_recorded(events)

    def _rollup(self, events: list[RunRecorded]) -> None:
        """The batch's differences to the analytics rollup (apps.activity.analytics)."""
        delta = analytics.Delta()
        steps = self.rows[RunStep]
        for step_id in self.new[RunStep]:
            delta.add_step(analytics.step_values(steps[step_id]))
        for step_id, before in self.step_before.items():
            delta.add_step(before, sign=-1)
            delta.add_step(analytics.step_values(steps[step_id]))
        for event in events:
            delta.add_run(analytics.run_values(event.run))
            if event.previous is not None:
                delta.add_run(analytics.run_values(event.previous), sign=-1)
        analytics.rollup_apply(self.agent.pk, delta)

    def _write(self, model: type) -> None:
        new = self.new[model]
        if new:
            rows = [self.rows[model][row_id] for row_id in new]
            try:
                # No savepoint of its own (two round trips): a clash fails the whole batch,
                # whose transaction the caller's atomic block rolls back.
                rows_insert(model, rows)
            except IntegrityError as exc:
                raise self._clash(model, new, exc) from None
        dirty = self.dirty[model]
        if dirty:
            names = sorted(set().union(*dirty.values()))
            model.objects.bulk_create(  # type: ignore[attr-defined]
                [self.rows[model][row_id] for row_id in sorted(dirty)],
                batch_size=1000,
                update_conflicts=True,
                unique_fields=["row"],
                update_fields=names,
            )

    def _clash(self, model: type, new: dict[str, str], exc: IntegrityError) -> BadRequest:
        """The 400 of a batch whose new rows clashed with rows inserted meanwhile, naming the
        record PostgreSQL names (`Key (agent_id, id)=(agt_1, run_1) already exists.`); the
        transaction is aborted, so nothing more is read."""
        diag = getattr(exc.__cause__, "diag", None)
        match = _CLASH.search(getattr(diag, "message_detail", None) or "")
        column, value = match.groups() if match else ("id", None)
        if model is EndUser and column == "external_id":
            label = next(
                (label for row_id, label in new.items()
                 if self.rows[EndUser][row_id].external_id == value),
                next(iter(new.values())),
            )  # fmt: skip
            return BadRequest(f"{label}.external_id: already recorded for another user.")
        row_id, label = next(
            ((row_id, label) for row_id, label in new.items() if row_id == value),
            next(iter(new.items())),
        )
        return BadRequest(
            f"{label}.id: {row_id!r} was recorded concurrently or clashes with another record; "
            "send the record again."
        )

    def _reconcile(self) -> None:
        """Bring each run whose steps were recorded (or whose totals were stated and which had
        steps before) in line with its steps (apps.activity.services' docstring)."""
        run_ids = sorted(
            self.stepped | {run_id for run_id in self.stated if run_id not in self.new[Run]}
        )
        if not run_ids:
            return
        for run_id in run_ids:
            self.get(Run, run_id, lock=True)
        steps = RunStep.objects.filter(agent=self.agent, run_id__in=run_ids)
        aggregates: dict[str, Any] = {}
        for name in STEP_TOTALS:
            aggregates[f"{name}__sum"] = Sum(name)
            aggregates[f"{name}__count"] = Count(name)
        sums: dict[str, dict[str, Any]] = {
            row["run_id"]: dict(row)
            for row in steps.filter(kind=StepKind.MODEL).values("run_id").annotate(**aggregates)
        }
        tools: dict[str, list[tuple[str, bool]]] = {}
        first_models: dict[str, str] = {}
        documents: dict[str, list[str]] = {}
        for run_id, kind, tool_name, model_id, status, retrieved in (
            steps.filter(kind__in=(StepKind.TOOL, StepKind.MODEL, StepKind.RETRIEVAL))
            .order_by("run_id", "started_at", "id")
            .values_list("run_id", "kind", "tool_name", "model_id", "status", "documents")
        ):
            if kind == StepKind.TOOL and tool_name:
                tools.setdefault(run_id, []).append((tool_name, status == StepStatus.FAILED))
            elif kind == StepKind.MODEL and model_id and run_id not in first_models:
                first_models[run_id] = model_id
            elif kind == StepKind.RETRIEVAL:
                for document in retrieved if isinstance(retrieved, list) else []:
                    document_id = (
                        document.get("document_id") if isinstance(document, dict) else None
                    )
                    if isinstance(document_id, str) and document_id:
                        documents.setdefault(run_id, []).append(document_id)
        for run_id in run_ids:
            run = self.rows[Run].get(run_id)
            if run is None:
                continue
            values: dict[str, Any] = {}
            row = sums.get(run_id)
            for name in STEP_TOTALS:
                if row is None or not row[f"{name}__count"]:
                    continue
                total = row[f"{name}__sum"]
                stated = self.stated.get(run_id, {}).get(name)
                if stated is not None and not _same_total(stated[0], total):
                    raise BadRequest(
                        f"{stated[1]}.{name}: {stated[0]} disagrees with the sum of run "
                        f"{run_id!r}'s model steps ({total}); a total its steps carry is their sum."
                    )
                values[name] = total
            if run.model_id is None and run_id in first_models:
                values["model_id"] = first_models[run_id]
            tool_names = list(run.tool_names)
            failed = list(run.failed_tool_names)
            for tool_name, tool_failed in tools.get(run_id, []):
                if tool_name not in tool_names:
                    tool_names.append(tool_name)
                if tool_failed and tool_name not in failed:
                    failed.append(tool_name)
            values["tool_names"] = tool_names
            values["failed_tool_names"] = failed
            used = list(run.document_ids)
            for document_id in documents.get(run_id, []):
                if document_id not in used:
                    used.append(document_id)
            values["document_ids"] = used
            self._run_touch(run)
            changed = _apply(run, values, values.keys())
            if changed:
                run.updated_at = self.now
                self._changed(Run, run, [*changed, "updated_at"])
                self.changed_runs.add(run_id)
