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
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from apps.activity.events import RunRecorded, announce_run_recorded
from apps.activity.models import END_STATES, Conversation, EndUser, Message, Run, RunStatus
from apps.activity.serializers import Record
from apps.common.errors import BadRequest
from apps.common.time import iso
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


def activity_record(*, agent: Agent, records: Iterable[Record]) -> RecordResult:
    """Record validated records in order, all in one transaction: one bad record keeps none."""
    result = RecordResult()
    with transaction.atomic():
        for record in records:
            outcome = RECORDERS[record.kind](agent=agent, data=record.fields, label=record.label)
            result.count(outcome)
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


def _create(row: EndUser | Conversation | Message | Run, *, label: str) -> None:
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


def end_user_record(*, agent: Agent, data: dict, label: str = "record") -> str:
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


def conversation_record(*, agent: Agent, data: dict, label: str = "record") -> str:
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

_MESSAGE_FIELDS = ("role", "parts", "source_id", "created_at", "updated_at")


def message_record(*, agent: Agent, data: dict, label: str = "record") -> str:
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
        _apply(message, data, _MESSAGE_FIELDS)
        _create(message, label=label)
        return CREATED
    if "conversation_id" in data and data["conversation_id"] != message.conversation_id:
        raise BadRequest(
            f"{label}.conversation_id: message {message.id!r} belongs to conversation "
            f"{message.conversation_id!r} and cannot move."
        )
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


def run_record(*, agent: Agent, data: dict, label: str = "record") -> str:
    run = _locked(Run, agent=agent, record_id=data.get("id"))
    now = timezone.now()
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


RECORDERS: dict[str, Callable[..., str]] = {
    "user": end_user_record,
    "conversation": conversation_record,
    "message": message_record,
    "run": run_record,
}
