"""Recording what an Agent runtime observes: the only code that writes activity.

POST /v1/ingest, `manage.py import_activity` and the demo seed all come through
`activity_record`. Each record is upserted by id (users also by `external_id`), so sending the
same record twice changes nothing. Rules:

- A field absent from a record keeps its stored value; a field present replaces it.
- Users: `last_seen_at` only moves forward and `first_seen_at` only backward.
- Runs: `streaming` may move to `completed`, `failed` or `aborted`; an ended run never changes
  status again (400). Every created or changed run is announced (`apps.activity.events`) in the
  same transaction; webhooks listens and records its outbox row when the run ended, and
  re-sending the ended run does not record another.
- Referenced users and conversations must already exist for the Agent (earlier in the same
  request counts); anything else is a 400 naming the record and field.
- Steps: upserted by id under their run (which never changes). A run's totals agree with its
  steps (`runs_reconcile`, at the end of each request): a token or credit total that any of
  the run's model steps carries is the sum over its model steps, a tool step's name is in the
  run's `tool_names` (and `failed_tool_names` when it failed), and a run with no model of its
  own takes its first model step's. A run record stating a total that disagrees with the sum
  of the steps that carry it is a 400; totals no step carries stay the run record's own.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from apps.activity.bounds import bounded_attributes, bounded_documents, bounded_json, bounded_text
from apps.activity.events import RunRecorded, announce_run_recorded
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
from apps.activity.serializers import Record
from apps.common.errors import BadRequest
from apps.common.time import iso
from apps.knowledge.events import KnowledgeSearched
from apps.workspaces.browser_tokens import browser_token_sign
from apps.workspaces.models import Agent, ApiKey

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"


@dataclass
class RecordResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def count(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)

    def as_dict(self) -> dict:
        return {
            "object": "ingest_result",
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
        }


# The run totals that its model steps may carry (see the module docstring).
STEP_TOTALS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "credits_charged",
)


@dataclass
class Batch:
    """What one request's records did to runs, reconciled with their steps at its end."""

    # Runs whose steps were recorded.
    stepped: set[str] = field(default_factory=set)
    # run id -> {total: (value stated by a run record, that record's label)}
    stated: dict[str, dict[str, tuple[Any, str]]] = field(default_factory=dict)


def activity_record(*, agent: Agent, records: Iterable[Record]) -> RecordResult:
    """Record validated records in order, all in one transaction: one bad record keeps none."""
    result = RecordResult()
    batch = Batch()
    with transaction.atomic():
        for record in records:
            outcome = RECORDERS[record.kind](
                agent=agent, data=record.fields, label=record.label, batch=batch
            )
            result.count(outcome)
        runs_reconcile(agent=agent, batch=batch)
    return result


# --- helpers -------------------------------------------------------------------------------------


def _locked(model: type[Any], *, agent: Agent, record_id: str | None):
    """The Agent's record with this id, locked for the rest of the transaction; None when new.

    Ids are unique per Agent: another Agent's record with the same id is invisible here, so
    recording answers exactly as for an unused id (docs/faults.md, item 5).
    """
    if record_id is None:
        return None
    return model.objects.select_for_update().filter(agent=agent, id=record_id).first()


def _apply(row: models.Model, data: dict, names: Iterable[str]) -> list[str]:
    changed = []
    for name in names:
        if name in data and getattr(row, name) != data[name]:
            setattr(row, name, data[name])
            changed.append(name)
    return changed


def _stamp_updated_at(row: models.Model, data: dict, changed: list[str], *, now) -> None:
    """Take the record's `updated_at` if it has one, else stamp `now` when anything changed."""
    if "updated_at" in data:
        changed += _apply(row, data, ("updated_at",))
    elif changed:
        row.updated_at = now  # type: ignore[attr-defined]
        changed.append("updated_at")


def _create(row: EndUser | Conversation | Message | Run | RunStep, *, label: str) -> None:
    """Insert in a savepoint: a concurrent insert of the same id becomes a clean 400."""
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        raise BadRequest(
            f"{label}.id: {row.id!r} was recorded concurrently or clashes with another "
            "record; send the record again."
        ) from None


def _user_of(agent: Agent, user_id: str | None, *, label: str) -> EndUser | None:
    if user_id is None:
        return None
    user = EndUser.objects.filter(agent=agent, id=user_id).first()
    if user is None:
        raise BadRequest(f"{label}.user_id: no user {user_id!r} recorded for this Agent.")
    return user


def _conversation_of(agent: Agent, conversation_id: str, *, label: str) -> Conversation:
    conversation = Conversation.objects.filter(agent=agent, id=conversation_id).first()
    if conversation is None:
        raise BadRequest(
            f"{label}.conversation_id: no conversation {conversation_id!r} recorded for this Agent."
        )
    return conversation


def _require(data: dict, names: Iterable[str], *, label: str, kind: str) -> None:
    for name in names:
        if name not in data:
            raise BadRequest(f"{label}.{name}: required when recording a new {kind}.")


# --- users -------------------------------------------------------------------------------------

_USER_FIELDS = ("external_id", "identity_type", "display_name", "email", "avatar_url")


def end_user_record(
    *, agent: Agent, data: dict, label: str = "record", batch: Batch | None = None
) -> str:
    """Upsert an end user seen by the Agent, by `id` or else by `external_id`."""
    user = _locked(EndUser, agent=agent, record_id=data.get("id"))
    external_id = data.get("external_id")
    if external_id is not None:
        holder = (
            EndUser.objects.select_for_update().filter(agent=agent, external_id=external_id).first()
        )
        if holder is not None and "id" in data and holder.id != data["id"]:
            raise BadRequest(
                f"{label}.external_id: already recorded for user {holder.id!r}, not {data['id']!r}."
            )
        user = user or holder
    now = timezone.now()
    if user is None:
        last_seen = data.get("last_seen_at") or now
        user = EndUser(
            agent=agent,
            first_seen_at=min(data.get("first_seen_at") or last_seen, last_seen),
            last_seen_at=last_seen,
        )
        if "id" in data:
            user.id = data["id"]
        _apply(user, data, _USER_FIELDS)
        _create(user, label=label)
        return CREATED
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
    try:
        with transaction.atomic():
            user.save(update_fields=changed)
    except IntegrityError:
        raise BadRequest(f"{label}.external_id: already recorded for another user.") from None
    return UPDATED


# --- browser tokens ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuthToken:
    token: str
    expires_at: datetime
    user_id: str
    agent_id: str

    def as_dict(self) -> dict:
        return {
            "object": "auth_token",
            "token": self.token,
            "expires_at": iso(self.expires_at),
            "user_id": self.user_id,
            "agent_id": self.agent_id,
        }


def auth_token_create(
    *, key: ApiKey, external_id: str, profile: dict, lifetime_seconds: int
) -> AuthToken:
    """Sign an end user of the key's Agent in for the browser: upsert them as an identified
    user (`identity_type` = `user`, seen now) and mint a token bound to them.

    `profile` holds `display_name` and `email` when given; absent ones keep stored values.
    """
    agent = key.agent
    data = {**profile, "external_id": external_id, "identity_type": EndUser.IdentityType.USER}
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                end_user_record(agent=agent, data={**data, "last_seen_at": timezone.now()})
                user_id = EndUser.objects.get(agent=agent, external_id=external_id).id
            break
        except BadRequest:
            # Two first sign-ins of one user at once: the loser's insert clashes; the second
            # attempt finds the row the winner made.
            if attempt == 2:
                raise
    token, claims = browser_token_sign(key=key, user_id=user_id, lifetime_seconds=lifetime_seconds)
    return AuthToken(token=token, expires_at=claims.expires_at, user_id=user_id, agent_id=agent.pk)


# --- conversations -------------------------------------------------------------------------------

_CONVERSATION_FIELDS = ("title", "status", "source")


def conversation_record(
    *, agent: Agent, data: dict, label: str = "record", batch: Batch | None = None
) -> str:
    conversation = _locked(Conversation, agent=agent, record_id=data.get("id"))
    if "user_id" in data:
        _user_of(agent, data["user_id"], label=label)
    now = timezone.now()
    if conversation is None:
        created_at = data.get("created_at") or now
        conversation = Conversation(
            agent=agent, created_at=created_at, updated_at=data.get("updated_at") or created_at
        )
        if "id" in data:
            conversation.id = data["id"]
        _apply(conversation, data, (*_CONVERSATION_FIELDS, "user_id"))
        _create(conversation, label=label)
        return CREATED
    changed = _apply(conversation, data, (*_CONVERSATION_FIELDS, "user_id", "created_at"))
    _stamp_updated_at(conversation, data, changed, now=now)
    if not changed:
        return UNCHANGED
    conversation.save(update_fields=changed)
    return UPDATED


# --- messages ------------------------------------------------------------------------------------

_MESSAGE_FIELDS = ("role", "parts", "source_id", "run_id", "created_at", "updated_at")


def _message_run_check(agent: Agent, data: dict, conversation_id: str, *, label: str) -> None:
    """A message's run must be a run of the Agent in the message's own conversation."""
    run_id = data.get("run_id")
    if run_id is None:
        return
    run = Run.objects.filter(agent=agent, id=run_id).only("conversation_id").first()
    if run is None:
        raise BadRequest(f"{label}.run_id: no run {run_id!r} recorded for this Agent.")
    if run.conversation_id != conversation_id:
        raise BadRequest(
            f"{label}.run_id: run {run_id!r} belongs to conversation {run.conversation_id!r}, "
            f"not {conversation_id!r}."
        )


def message_record(
    *, agent: Agent, data: dict, label: str = "record", batch: Batch | None = None
) -> str:
    message = _locked(Message, agent=agent, record_id=data.get("id"))
    if message is None:
        _require(data, ("conversation_id", "role"), label=label, kind="message")
        conversation = _conversation_of(agent, data["conversation_id"], label=label)
        message = Message(
            agent=agent,
            conversation=conversation,
            parts=[],
            created_at=data.get("created_at") or timezone.now(),
        )
        if "id" in data:
            message.id = data["id"]
        _message_run_check(agent, data, conversation.id, label=label)
        _apply(message, data, _MESSAGE_FIELDS)
        _create(message, label=label)
        return CREATED
    if "conversation_id" in data and data["conversation_id"] != message.conversation_id:
        raise BadRequest(
            f"{label}.conversation_id: message {message.id!r} belongs to conversation "
            f"{message.conversation_id!r} and cannot move."
        )
    _message_run_check(agent, data, message.conversation_id, label=label)
    changed = _apply(message, data, _MESSAGE_FIELDS)
    if not changed:
        return UNCHANGED
    message.save(update_fields=changed)
    return UPDATED


# --- runs ----------------------------------------------------------------------------------------

_RUN_FIELDS = (
    "request_id",
    "model_id",
    "effort",
    "sdk_version",
    "protocol_version",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "credits_charged",
    "tool_names",
    "failed_tool_names",
    "component_kinds",
    "error_code",
    "first_chunk_at",
    "completed_at",
    "total_turn_latency_ms",
    "created_at",
)


def run_record(
    *, agent: Agent, data: dict, label: str = "record", batch: Batch | None = None
) -> str:
    run = _locked(Run, agent=agent, record_id=data.get("id"))
    now = timezone.now()
    if batch is not None:
        stated = {name: (data[name], label) for name in STEP_TOTALS if name in data}
        if stated:
            run_id = run.id if run is not None else data.get("id")
            if run_id is not None:
                batch.stated.setdefault(run_id, {}).update(stated)
    if "user_id" in data:
        _user_of(agent, data["user_id"], label=label)
    if run is None:
        _require(data, ("conversation_id", "request_id", "sdk_version"), label=label, kind="run")
        conversation = _conversation_of(agent, data["conversation_id"], label=label)
        created_at = data.get("created_at") or now
        run = Run(
            agent=agent,
            conversation=conversation,
            user_id=conversation.user_id,
            status=data.get("status", RunStatus.STREAMING),
            created_at=created_at,
            updated_at=data.get("updated_at") or created_at,
        )
        if "id" in data:
            run.id = data["id"]
        _apply(run, data, (*_RUN_FIELDS, "user_id"))
        _create(run, label=label)
        announce_run_recorded(RunRecorded(run=run, previous=None, ended=run.status in END_STATES))
        return CREATED
    if "conversation_id" in data and data["conversation_id"] != run.conversation_id:
        raise BadRequest(
            f"{label}.conversation_id: run {run.id!r} belongs to conversation "
            f"{run.conversation_id!r} and cannot move."
        )
    new_status = data.get("status", run.status)
    ends_now = False
    if new_status != run.status:
        if run.status in END_STATES:
            raise BadRequest(
                f"{label}.status: run {run.id!r} already ended as {run.status!r}; an ended "
                f"run cannot become {new_status!r}."
            )
        ends_now = new_status in END_STATES
    previous = {name: getattr(run, name) for name in (*_RUN_FIELDS, "user_id", "status")}
    changed = _apply(run, data, (*_RUN_FIELDS, "user_id", "status"))
    _stamp_updated_at(run, data, changed, now=now)
    if not changed:
        return UNCHANGED
    run.save(update_fields=changed)
    announce_run_recorded(RunRecorded(run=run, previous=previous, ended=ends_now))
    return UPDATED


def _run_update(*, run: Run, values: dict[str, Any]) -> None:
    """Change a run's fields as recording does: stamp, save, announce (usage, webhooks)."""
    previous = {name: getattr(run, name) for name in (*_RUN_FIELDS, "user_id", "status")}
    changed = _apply(run, values, values.keys())
    if not changed:
        return
    run.updated_at = timezone.now()
    run.save(update_fields=[*changed, "updated_at"])
    announce_run_recorded(RunRecorded(run=run, previous=previous, ended=False))


# --- steps ---------------------------------------------------------------------------------------

_STEP_FIELDS = (
    "parent_id",
    "kind",
    "name",
    "status",
    "error",
    "started_at",
    "ended_at",
    "duration_ms",
    "input",
    "output",
    "model_id",
    *STEP_TOTALS,
    "first_token_ms",
    "finish_reason",
    "tool_name",
    "mcp_server",
    "query",
    "documents",
    "attributes",
)
# Ancestors walked to refuse a parent cycle; deeper trees than this are refused as well.
MAX_STEP_DEPTH = 1000


_BOUNDED = ("input", "output", "error", "query", "documents", "attributes")


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


def _parent_check(agent: Agent, *, step_id: str, run_id: str, parent_id: str, label: str) -> None:
    """The parent is a step of the same run, and the step is not among its ancestors."""
    current: str | None = parent_id
    for _depth in range(MAX_STEP_DEPTH):
        if current is None:
            return
        if current == step_id:
            raise BadRequest(f"{label}.parent_id: {parent_id!r} would make a cycle of steps.")
        parent = (
            RunStep.objects.filter(agent=agent, id=current).values_list("run_id", "parent_id")
        ).first()
        if parent is None or parent[0] != run_id:
            raise BadRequest(f"{label}.parent_id: no step {current!r} recorded for run {run_id!r}.")
        current = parent[1]
    raise BadRequest(f"{label}.parent_id: steps nest deeper than {MAX_STEP_DEPTH} levels.")


def step_record(
    *, agent: Agent, data: dict, label: str = "record", batch: Batch | None = None
) -> str:
    """Upsert a step of a run by id; see the module docstring for how the run follows."""
    step = _locked(RunStep, agent=agent, record_id=data.get("id"))
    data, cut = step_bounded(data)
    now = timezone.now()
    if step is None:
        _require(data, ("run_id", "name"), label=label, kind="step")
        if not Run.objects.filter(agent=agent, id=data["run_id"]).exists():
            raise BadRequest(f"{label}.run_id: no run {data['run_id']!r} recorded for this Agent.")
        step = RunStep(agent_id=agent.pk, run_id=data["run_id"], created_at=now, updated_at=now)
        step.started_at = data.get("started_at") or now
        if "id" in data:
            step.id = data["id"]
        _apply(step, {**data, "truncated": cut}, (*_STEP_FIELDS, "truncated"))
        _step_validate(agent, step, data, label=label)
        _create(step, label=label)
        outcome = CREATED
    else:
        if "run_id" in data and data["run_id"] != step.run_id:
            raise BadRequest(
                f"{label}.run_id: step {step.id!r} belongs to run {step.run_id!r} and cannot move."
            )
        data["truncated"] = _truncated_after(step.truncated, data, cut)
        changed = _apply(step, data, (*_STEP_FIELDS, "truncated"))
        if not changed:
            return UNCHANGED
        _step_validate(agent, step, data, label=label)
        step.updated_at = now
        step.save(update_fields=[*changed, "updated_at"])
        outcome = UPDATED
    if batch is not None:
        batch.stepped.add(step.run_id)
    else:
        runs_reconcile(agent=agent, batch=Batch(stepped={step.run_id}))
    return outcome


def _step_validate(agent: Agent, step: RunStep, data: dict, *, label: str) -> None:
    if step.ended_at is not None and step.ended_at < step.started_at:
        raise BadRequest(f"{label}.ended_at: earlier than started_at.")
    if "duration_ms" not in data and step.ended_at is not None:
        step.duration_ms = (step.ended_at - step.started_at).total_seconds() * 1000
    if step.parent_id is not None and "parent_id" in data:
        _parent_check(
            agent, step_id=step.id, run_id=step.run_id, parent_id=step.parent_id, label=label
        )


def runs_reconcile(*, agent: Agent, batch: Batch) -> None:
    """Bring each run touched by this request in line with its steps (module docstring)."""
    run_ids = sorted(batch.stepped | set(batch.stated))
    if not run_ids:
        return
    aggregates: dict[str, Any] = {}
    for name in STEP_TOTALS:
        aggregates[f"{name}__sum"] = Sum(name)
        aggregates[f"{name}__count"] = Count(name)
    sums: dict[str, dict[str, Any]] = {
        row["run_id"]: dict(row)
        for row in RunStep.objects.filter(agent=agent, run_id__in=run_ids, kind=StepKind.MODEL)
        .values("run_id")
        .annotate(**aggregates)
    }
    tools: dict[str, list[tuple[str, bool]]] = {}
    first_models: dict[str, str] = {}
    documents: dict[str, list[str]] = {}
    for run_id, retrieved in (
        RunStep.objects.filter(agent=agent, run_id__in=run_ids, kind=StepKind.RETRIEVAL)
        .order_by("run_id", "started_at", "id")
        .values_list("run_id", "documents")
    ):
        for document in retrieved if isinstance(retrieved, list) else []:
            document_id = document.get("document_id") if isinstance(document, dict) else None
            if isinstance(document_id, str) and document_id:
                documents.setdefault(run_id, []).append(document_id)
    for run_id, kind, tool_name, model_id, status in (
        RunStep.objects.filter(
            agent=agent, run_id__in=run_ids, kind__in=(StepKind.TOOL, StepKind.MODEL)
        )
        .order_by("run_id", "started_at", "id")
        .values_list("run_id", "kind", "tool_name", "model_id", "status")
    ):
        if kind == StepKind.TOOL and tool_name:
            tools.setdefault(run_id, []).append((tool_name, status == StepStatus.FAILED))
        elif kind == StepKind.MODEL and model_id and run_id not in first_models:
            first_models[run_id] = model_id
    for run in Run.objects.select_for_update().filter(agent=agent, id__in=run_ids).order_by("id"):
        values: dict[str, Any] = {}
        row = sums.get(run.id)
        for name in STEP_TOTALS:
            if row is None or not row[f"{name}__count"]:
                continue
            total = row[f"{name}__sum"]
            stated = batch.stated.get(run.id, {}).get(name)
            if stated is not None and not _same_total(stated[0], total):
                raise BadRequest(
                    f"{stated[1]}.{name}: {stated[0]} disagrees with the sum of run {run.id!r}'s "
                    f"model steps ({total}); a total its steps carry is their sum."
                )
            values[name] = total
        if run.model_id is None and run.id in first_models:
            values["model_id"] = first_models[run.id]
        tool_names = list(run.tool_names)
        failed = list(run.failed_tool_names)
        for tool_name, tool_failed in tools.get(run.id, []):
            if tool_name not in tool_names:
                tool_names.append(tool_name)
            if tool_failed and tool_name not in failed:
                failed.append(tool_name)
        values["tool_names"] = tool_names
        values["failed_tool_names"] = failed
        used = list(run.document_ids)
        for document_id in documents.get(run.id, []):
            if document_id not in used:
                used.append(document_id)
        values["document_ids"] = used
        _run_update(run=run, values=values)


def _same_total(stated: Any, total: Any) -> bool:
    if stated is None or total is None:
        return stated is total
    return abs(float(stated) - float(total)) <= 1e-9 * max(1.0, abs(float(total)))


RECORDERS: dict[str, Callable[..., str]] = {
    "user": end_user_record,
    "conversation": conversation_record,
    "message": message_record,
    "run": run_record,
    "step": step_record,
}


def retrieval_step_record_on_search(event: KnowledgeSearched) -> None:
    """A knowledge search that named its run becomes that run's retrieval step (listener of
    apps.knowledge.events; registered in apps.activity.apps)."""
    duration = (event.ended_at - event.started_at).total_seconds() * 1000
    with transaction.atomic():
        _retrieval_step_record(event, duration)


def _retrieval_step_record(event: KnowledgeSearched, duration: float) -> None:
    step_record(
        agent=event.agent,
        label="body",
        data={
            "run_id": event.run_id,
            "kind": StepKind.RETRIEVAL,
            "name": f"knowledge search ({event.mode})",
            "query": event.query,
            "documents": [
                {
                    "document_id": passage.document_id,
                    "title": passage.document_name,
                    "passage": passage.passage,
                    "score": passage.score,
                }
                for passage in event.passages
            ],  # fmt: skip
            "started_at": event.started_at,
            "ended_at": event.ended_at,
            "duration_ms": duration,
        },
    )
