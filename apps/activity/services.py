"""Recording what an Agent runtime observes: the only code that writes activity.

POST /v1/ingest, `manage.py import_activity` and the demo seed all come through
`activity_record`. Each record is upserted by id (users also by `external_id`), so sending the
same record twice changes nothing. Rules:

- A field absent from a record keeps its stored value; a field present replaces it.
- Users: `last_seen_at` only moves forward and `first_seen_at` only backward.
- Runs: `streaming` may move to `completed`, `failed` or `aborted`; an ended run never changes
  status again (400). The runs a request created or changed are announced once, as one batch,
  at its end (`apps.activity.events`), in the same transaction; webhooks listens and records
  its outbox row for each run that ended, and re-sending the ended run does not record another.
- Referenced users and conversations must already exist for the Agent (earlier in the same
  request counts); anything else is a 400 naming the record and field.
- Steps: upserted by id under their run (which never changes). A run's totals agree with its
  steps (reconciled at the end of each request): a token or credit total that any of
  the run's model steps carries is the sum over its model steps, a tool step's name is in the
  run's `tool_names` (and `failed_tool_names` when it failed), and a run with no model of its
  own takes its first model step's. A run record stating a total that disagrees with the sum
  of the steps that carry it is a 400; totals no step carries stay the run record's own.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.activity import events
from apps.activity.models import EndUser, StepKind
from apps.activity.recording import (
    CREATED,
    MAX_STEP_DEPTH,
    STEP_TOTALS,
    UNCHANGED,
    UPDATED,
    Unit,
    step_bounded,
    wanted_of,
)
from apps.activity.records import RECORD_SERIALIZERS, Record
from apps.common.errors import BadRequest
from apps.common.time import iso
from apps.knowledge.events import KnowledgeSearched
from apps.workspaces.browser_tokens import browser_token_sign
from apps.workspaces.models import Agent, ApiKey

__all__ = [
    "CREATED", "MAX_STEP_DEPTH", "STEP_TOTALS", "UNCHANGED", "UPDATED", "RecordResult",
    "activity_record", "auth_token_create", "conversation_record", "end_user_record",
    "message_record", "run_record", "step_bounded", "step_record",
]  # fmt: skip


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


# The kinds activity records itself.
KINDS = frozenset(RECORD_SERIALIZERS)


def activity_record(*, agent: Agent, records: Iterable[Record]) -> RecordResult:
    """Record validated records in order, all in one transaction: one bad record keeps none.

    Set-based (apps.activity.recording): the rows the records name are read in one query per
    table, the records applied in memory, and what changed written with one statement per
    table, whatever the number of records."""
    records = list(records)
    result = RecordResult()
    # Kinds other apps registered (apps.activity.events), written after activity's own.
    others: dict[str, list[tuple[dict, str]]] = {}
    with transaction.atomic():
        unit = Unit(agent)
        unit.prefetch(
            wanted_of((record.kind, record.fields) for record in records if record.kind in KINDS)
        )
        for record in records:
            if record.kind in KINDS:
                result.count(unit.record(record.kind, record.fields, record.label))
            else:
                others.setdefault(record.kind, []).append((record.fields, record.label))
        unit.flush()
        for kind, items in others.items():
            registered = events.ingest_kind(kind)
            assert registered is not None  # records_parse let only registered kinds through
            for outcome in registered.record(agent=agent, items=items):
                result.count(outcome)
    return result


def _record_one(agent: Agent, kind: str, data: dict, label: str) -> str:
    with transaction.atomic():
        unit = Unit(agent)
        outcome = unit.record(kind, data, label)
        unit.flush()
    return outcome


def end_user_record(*, agent: Agent, data: dict, label: str = "record") -> str:
    """Upsert an end user seen by the Agent, by `id` or else by `external_id`."""
    return _record_one(agent, "user", data, label)


def conversation_record(*, agent: Agent, data: dict, label: str = "record") -> str:
    return _record_one(agent, "conversation", data, label)


def message_record(*, agent: Agent, data: dict, label: str = "record") -> str:
    return _record_one(agent, "message", data, label)


def run_record(*, agent: Agent, data: dict, label: str = "record") -> str:
    return _record_one(agent, "run", data, label)


def step_record(*, agent: Agent, data: dict, label: str = "record") -> str:
    """Upsert a step of a run by id; the run's totals follow (module docstring)."""
    return _record_one(agent, "step", data, label)


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
