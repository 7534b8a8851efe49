"""Announcements of recorded runs, so other apps can react without activity knowing them.

The dependency is one-way: webhooks (outbox rows for ended runs) and any other app that keeps
something derived from runs register a listener in their `AppConfig.ready()`; activity imports
none of them. Listeners run inside the recording transaction, so what they write commits or
rolls back with the run itself, and they must not do network I/O.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.activity.models import Run
from apps.common.events import Announcement


@dataclass(frozen=True)
class RunRecorded:
    run: Run
    # The run's field values before this recording (None when the run was just created), so a
    # listener that keeps totals can apply the difference.
    previous: dict[str, Any] | None
    # True when this recording moved the run into an end state (completed, failed, aborted).
    ended: bool


run_recorded: Announcement[RunRecorded] = Announcement()
# The runs one recording batch (an ingest request, an OTLP request) changed, announced once at
# its end, each run once with its state before the batch: listeners that write (usage's rollup,
# webhooks' outbox) do it set-based, with one statement per batch rather than one per run.
runs_recorded: Announcement[list[RunRecorded]] = Announcement()
# The names listeners and the recording service use.
on_run_recorded = run_recorded.listen
on_runs_recorded = runs_recorded.listen


def announce_runs_recorded(events: list[RunRecorded]) -> None:
    """Announce a batch: to the batch listeners, and run by run to the others."""
    runs_recorded.announce(events)
    for event in events:
        run_recorded.announce(event)


# --- Record kinds other apps add to POST /v1/ingest --------------------------------------------
# A runtime records runs and what judges them in one batch: an app that owns a kind of record
# (scores: `score`) registers it in its `AppConfig.ready()`. Activity validates each such
# record with the kind's `parse` (a BadRequest names `label.field`) and, in the ingest's
# transaction after its own records are written (so a record may name a run of the same
# batch), hands all of them to `record`, which answers one outcome per record ("created",
# "updated" or "unchanged"). Activity imports nothing of the app that registered the kind.


@dataclass(frozen=True)
class IngestKind:
    parse: Callable[[dict, str], dict]
    record: Callable[..., list[str]]  # record(*, agent, items: list[tuple[dict, str]])
    # A serializer describing the record for the OpenAPI document (its `type` field names it).
    schema: type | None = None


_ingest_kinds: dict[str, IngestKind] = {}


def ingest_kind_register(
    name: str,
    *,
    parse: Callable[[dict, str], dict],
    record: Callable[..., list[str]],
    schema: type | None = None,
) -> None:
    _ingest_kinds[name] = IngestKind(parse=parse, record=record, schema=schema)


def ingest_kind(name: str) -> IngestKind | None:
    return _ingest_kinds.get(name)


def ingest_kind_names() -> tuple[str, ...]:
    return tuple(_ingest_kinds)


def ingest_kind_schemas() -> list[type]:
    return [kind.schema for kind in _ingest_kinds.values() if kind.schema is not None]


# --- An end user's data deleted on request (apps.activity.erasure) -----------------------------


@dataclass(frozen=True)
class EndUserDataDeleted:
    """Announced inside the deletion's transaction, before activity deletes its own rows, so a
    listener deletes what it keeps about them (scores, webhook payloads) in the same commit.
    `conversation_ids` and `run_ids` are querysets of ids (subqueries, whatever their size)."""

    agent_id: str
    user_id: str
    conversation_ids: Any
    run_ids: Any


end_user_data_deleted: Announcement[EndUserDataDeleted] = Announcement()
on_end_user_data_deleted = end_user_data_deleted.listen
