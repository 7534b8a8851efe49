"""Recording OpenTelemetry spans as runs and steps (POST /v1/otlp/v1/traces).

A trace is a run: the run's id is the trace id, its root span (no parent) creates it, and
every span of the trace is a step (the root too) whose id is the span id. The run takes its
conversation from `gen_ai.conversation.id` (or the AI SDK's telemetry metadata
`conversationId`/`chatId`), its end user from `userId`/`user.id`, its model and token totals
from its model steps (apps.activity.services, "run totals follow model steps").

Exporters send a span when it ends, so a child usually arrives before its parent: a span whose
parent (or whose trace's run) is not known yet is kept in `PendingSpan` and placed when the
spans above it arrive. Writes are set-based: one upsert of every step of a request, one of
every waiting span, whatever their number.

A span that cannot be placed for a reason of its own (its id recorded in another trace, a parent
in another trace, a cycle of parents) is rejected alone and counted (OTLP partial success);
a trace whose run cannot be recorded rejects that trace's spans only.

Beside it: what a trace says about its run (apps.activity.trace_runs), the AI SDK's detached
tool calls (orphan_spans), spans whose parent never came (pending_spans), the locks requests
take on their traces (trace_locks).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.activity import analytics, otlp, span_mapping
from apps.activity.models import PendingSpan, Run, RunStep
from apps.activity.orphan_spans import orphan_tool_calls_attach
from apps.activity.recording import (
    MAX_STEP_DEPTH,
    Unit,
    new_row,
    step_bounded,
    values_insert,
)
from apps.activity.search_index import step_search_fields
from apps.activity.trace_locks import locks_take
from apps.activity.trace_runs import TraceFacts, run_of_trace
from apps.common.errors import BadRequest
from apps.workspaces.models import Agent

# Spans nest at most as deep as steps recorded through /v1/ingest may (counted within what one
# request can see: its spans and those waiting in their traces).
MAX_SPAN_DEPTH = MAX_STEP_DEPTH
# Spans of one trace waiting for their parents: what a request loads of its traces is bounded.
MAX_PENDING_SPANS_PER_TRACE = 10_000
_STEP_UPDATE_FIELDS = [
    "run_id", "parent_id", "trace_id", "kind", "name", "status", "error", "started_at",
    "ended_at", "duration_ms", "input", "output", "model_id", "input_tokens", "output_tokens",
    "total_tokens", "cache_read_tokens", "cache_write_tokens", "credits_charged",
    "first_token_ms", "finish_reason", "tool_name", "mcp_server", "query", "documents",
    "attributes", "truncated", "updated_at", "search_text", "search_config",
]  # fmt: skip


@dataclass
class SpansResult:
    recorded: int = 0
    waiting: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def reject(self, count: int, message: str) -> None:
        self.rejected += count
        if len(self.errors) < 5:
            self.errors.append(message)

    @property
    def message(self) -> str:
        return " ".join(self.errors)


def spans_record(*, agent: Agent, spans: list[otlp.SpanData]) -> SpansResult:
    """Record decoded spans for the Agent: place what can be placed, keep the rest waiting."""
    result = SpansResult()
    with transaction.atomic():
        _spans_record(agent, spans, result)
    return result


def _spans_record(agent: Agent, spans: list[otlp.SpanData], result: SpansResult) -> None:
    """Load the waiting spans of these traces, reject the unplaceable, place the rest under
    their runs (recorded with the trace's root), write their steps; what cannot be placed yet
    waits."""
    incoming = {span["span_id"]: span for span in spans}  # a repeated span: the last one counts
    trace_ids = {span["trace_id"] for span in incoming.values()}
    locks_take(agent, trace_ids)
    pool = _pending_load(agent, trace_ids)
    orphans = orphan_tool_calls_attach(agent, incoming, pool)
    waiting_before = set(pool)
    pool.update(incoming)
    wanted = set(pool) | {
        span["parent_span_id"] for span in pool.values() if span["parent_span_id"]
    }
    stored = steps_stored(agent, wanted)
    drop = _dropper(pool, incoming, result)
    _foreign_drop(pool, stored, drop)
    _drop_cycles(pool, drop)
    placed = _spans_place(pool, orphans, stored, drop)
    unit, failed_runs = _runs_of_traces(agent, _traces_of(pool, placed), incoming, result)
    now = timezone.now()
    steps = _steps_of(agent, pool, placed, unit=unit, failed_runs=failed_runs, now=now)
    steps_write(steps, stored=stored)
    recorded = {step["id"] for step in steps}
    result.recorded = len(recorded & set(incoming))
    unplaced = [span for span_id, span in pool.items() if span_id not in placed]
    _pending_write(
        agent,
        [span for span in unplaced if span["span_id"] not in recorded],
        incoming=incoming,
        trace_ids=trace_ids,
        waiting_before=waiting_before,
        gone_unseen=set(incoming) - set(pool),
        orphans=orphans,
        now=now,
        result=result,
    )
    unit.stepped |= {step["run_id"] for step in steps}
    unit.flush()


def _pending_load(agent: Agent, trace_ids: set[str]) -> dict[str, otlp.SpanData]:
    """The spans of these traces that wait for their parents, by span id."""
    pool: dict[str, otlp.SpanData] = {}
    for row in PendingSpan.objects.filter(agent=agent, trace_id__in=trace_ids).values_list(
        "span", flat=True
    ):
        pool[row["span_id"]] = row
    return pool


def _dropper(
    pool: dict[str, otlp.SpanData], incoming: dict[str, otlp.SpanData], result: SpansResult
) -> Callable[[str, str], None]:
    """Take a span out of the pool; one of this request's is counted as rejected."""

    def drop(span_id: str, message: str) -> None:
        if span_id in incoming:
            result.reject(1, message)
        pool.pop(span_id, None)

    return drop


def _foreign_drop(pool: dict[str, otlp.SpanData], stored: dict, drop) -> None:
    """Reject the spans whose id, or whose parent, is recorded in another trace."""
    for span_id, span in list(pool.items()):
        known = stored.get(span_id)
        if known is not None and known[0] != span["trace_id"]:
            drop(span_id, f"span {span_id}: its id is recorded in another trace.")
            continue
        parent_id = span["parent_span_id"]
        parent = pool.get(parent_id) if parent_id else None
        parent_trace = parent["trace_id"] if parent else stored.get(parent_id, (None,))[0]
        if parent_id and parent_trace is not None and parent_trace != span["trace_id"]:
            drop(span_id, f"span {span_id}: parent {parent_id} belongs to another trace.")


def _spans_place(
    pool: dict[str, otlp.SpanData], orphans: dict[str, str], stored: dict, drop
) -> dict[str, str]:
    """Which run each span belongs to (span id -> run id): the trace's, once its chain reaches a
    root or a step. Each span is walked once: a walk stops at a span already placed or already
    known to wait. Spans nested deeper than MAX_SPAN_DEPTH are rejected."""
    placed: dict[str, str] = {}
    unplaced: set[str] = set()
    depth: dict[str, int] = {}  # levels below the top of what this request can see
    for span_id in pool:
        if span_id in orphans or span_id in placed or span_id in unplaced:
            continue
        chain = []
        current: str | None = span_id
        run_id = None
        top = 0
        while current is not None:
            if current in placed:
                run_id, top = placed[current], depth[current] + 1
                break
            if current in unplaced:
                break
            if current in stored and current not in pool:
                run_id = stored[current][1]
                break
            link = pool.get(current)
            if link is None:
                break
            chain.append(current)
            if link["parent_span_id"] is None:
                run_id = link["trace_id"]
                break
            current = link["parent_span_id"]
        if run_id is None:
            unplaced.update(chain)  # a chain that stops at an unknown parent waits
            continue
        for level, member in enumerate(reversed(chain), start=top):
            placed[member] = run_id
            depth[member] = level
    for span_id in [span_id for span_id, level in depth.items() if level >= MAX_SPAN_DEPTH]:
        drop(span_id, f"span {span_id}: nests deeper than {MAX_SPAN_DEPTH} levels (the limit "
                      "of span depth).")  # fmt: skip
        del placed[span_id]
    return placed


def _traces_of(
    pool: dict[str, otlp.SpanData], placed: dict[str, str]
) -> list[tuple[list[otlp.SpanData], list[otlp.SpanData]]]:
    """Each trace with a root: its roots (normally one, in the order they came) and its
    placed spans."""
    roots: dict[str, list[otlp.SpanData]] = {}
    by_run: dict[str, list[otlp.SpanData]] = {}
    for span_id, span in pool.items():
        if span_id in placed:
            by_run.setdefault(placed[span_id], []).append(span)
            if span["parent_span_id"] is None:
                roots.setdefault(span["trace_id"], []).append(span)
    return [(trace_roots, by_run.get(trace_id, [])) for trace_id, trace_roots in roots.items()]


def _steps_of(
    agent: Agent,
    pool: dict[str, otlp.SpanData],
    placed: dict[str, str],
    *,
    unit: Unit,
    failed_runs: set[str],
    now: datetime,
) -> list[dict[str, Any]]:
    """The step rows of the placed spans whose run exists."""
    run_ids = {run_id for run_id in placed.values() if run_id not in failed_runs}
    # The runs the unit holds exist (locked, or created by it); only the others are looked up.
    held = {run_id for run_id in run_ids if unit.rows[Run].get(run_id) is not None}
    existing_runs = held | set(
        Run.objects.filter(agent=agent, id__in=run_ids - held).values_list("id", flat=True)
    )
    return [
        step_values(
            *step_bounded(span_mapping.step_fields(pool[span_id])),
            agent=agent,
            run_id=run_id,
            now=now,
        )  # fmt: skip
        for span_id, run_id in placed.items()
        if run_id in existing_runs
    ]


def _pending_write(
    agent: Agent,
    waiting: list[otlp.SpanData],
    *,
    incoming: dict[str, otlp.SpanData],
    trace_ids: set[str],
    waiting_before: set[str],
    gone_unseen: set[str],
    orphans: dict[str, str],
    now: datetime,
    result: SpansResult,
) -> None:
    """Keep the spans that still wait (within MAX_PENDING_SPANS_PER_TRACE), forget those that
    no longer do: placed now, or rejected (`gone_unseen`: this request's spans dropped)."""
    waiting = _pending_bounded(waiting, incoming, result)
    # Spans that waited before and still wait keep their row (refreshed: their trace is alive);
    # only this request's are written, so a trace's waiting spans are not rewritten each time.
    if any(span["span_id"] not in incoming for span in waiting):
        PendingSpan.objects.filter(agent=agent, trace_id__in=trace_ids).update(received_at=now)
    PendingSpan.objects.bulk_create(
        [
            PendingSpan(
                agent_id=agent.pk,
                trace_id=span["trace_id"],
                span_id=span["span_id"],
                parent_span_id=span["parent_span_id"],
                span=span,
                received_at=now,
                conversation_id=orphans.get(span["span_id"]),
            )
            for span in waiting
            if span["span_id"] in incoming
        ],  # fmt: skip
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["agent", "span_id"],
        update_fields=["trace_id", "parent_span_id", "conversation_id", "span", "received_at"],
    )
    result.waiting = sum(1 for span in waiting if span["span_id"] in incoming)
    gone = (waiting_before - {span["span_id"] for span in waiting}) | gone_unseen
    if gone:
        PendingSpan.objects.filter(agent=agent, span_id__in=gone).delete()


def _pending_bounded(
    waiting: list[otlp.SpanData], incoming: dict[str, otlp.SpanData], result: SpansResult
) -> list[otlp.SpanData]:
    """The waiting spans, past MAX_PENDING_SPANS_PER_TRACE in a trace this request's refused
    (those that waited before keep their place)."""
    count: dict[str, int] = {}
    for span in waiting:
        if span["span_id"] not in incoming:
            count[span["trace_id"]] = count.get(span["trace_id"], 0) + 1
    kept = []
    for span in waiting:
        if span["span_id"] in incoming:
            trace_id = span["trace_id"]
            if count.get(trace_id, 0) >= MAX_PENDING_SPANS_PER_TRACE:
                result.reject(
                    1,
                    f"span {span['span_id']}: trace {trace_id} already has "
                    f"{MAX_PENDING_SPANS_PER_TRACE} spans waiting for their parents (the limit "
                    "of waiting spans per trace).",
                )
                continue
            count[trace_id] = count.get(trace_id, 0) + 1
        kept.append(span)
    return kept


def _runs_of_traces(
    agent: Agent,
    traces: list[tuple[list[otlp.SpanData], list[otlp.SpanData]]],
    incoming: dict[str, otlp.SpanData],
    result: "SpansResult",
) -> tuple[Unit, set[str]]:
    """Record every trace's run, conversation, end user and messages in one unit (flushed by
    the caller once the steps are written); when one trace cannot be recorded, each trace on
    its own instead, so that only its spans are rejected. Returns the unit and the failed
    traces. `traces` holds each trace's roots and spans, once per trace."""
    facts = [TraceFacts.of(roots, trace) for roots, trace in traces]
    locks_take(
        agent,
        {f"user:{fact.external_id}" for fact in facts if fact.external_id is not None}
        | {f"conversation:{fact.conversation_id}" for fact in facts},
    )
    unit = Unit(agent)
    try:
        with transaction.atomic():
            unit.prefetch(TraceFacts.wanted(facts))
            for fact in facts:
                run_of_trace(unit, fact)
        return unit, set()
    except BadRequest:
        pass
    failed: set[str] = set()
    for fact in facts:
        try:
            with transaction.atomic():
                alone = Unit(agent)
                run_of_trace(alone, fact)
                alone.flush()
        except BadRequest as exc:
            failed.add(fact.trace_id)
            count = sum(1 for span in fact.trace if span["span_id"] in incoming)
            result.reject(count, f"trace {fact.trace_id}: {exc.message}")
    return Unit(agent), failed


def step_values(
    fields: dict[str, Any], cut: list[str], *, agent: Agent, run_id: str, now: datetime
) -> dict[str, Any]:
    """A step row by attribute name (`recording.new_row`'s and `values_insert`'s `values`),
    from a span's bounded fields (`step_bounded(span_mapping.step_fields(span))`)."""
    fields.update(agent_id=agent.pk, run_id=run_id, created_at=now, updated_at=now, truncated=cut)
    fields.update(step_search_fields(fields))
    ended = fields["ended_at"]
    if ended is not None and fields.get("duration_ms") is None:
        fields["duration_ms"] = (ended - fields["started_at"]).total_seconds() * 1000
    return fields


def steps_stored(agent: Agent, ids: set[str]) -> dict[str, tuple[str | None, str]]:
    """step id -> (its trace id, its run id), for the Agent's steps among `ids`. On PostgreSQL
    the ids go as one array parameter (`= ANY(%s)`): a thousand `IN (%s, ...)` placeholders
    cost more to render, merge and parse than finding the rows."""
    if connection.vendor != "postgresql":
        query = RunStep.objects.filter(agent=agent, id__in=ids)
        return {step_id: (trace_id, run_id)
                for step_id, trace_id, run_id in query.values_list("id", "trace_id", "run_id")}  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, trace_id, run_id FROM activity_runstep WHERE agent_id = %s "
            "AND id = ANY(%s)",
            [agent.pk, sorted(ids)],
        )
        return {step_id: (trace_id, run_id) for step_id, trace_id, run_id in cursor.fetchall()}


def steps_write(steps: list[dict[str, Any]], *, stored: dict) -> None:
    """Spans never seen are inserted (one COPY of their values, no model instances); spans sent
    again rewrite their step (one upsert). A span recorded meanwhile by a request of another
    trace makes the insert fail: then every step is upserted."""
    new = [step for step in steps if step["id"] not in stored]
    again = [step for step in steps if step["id"] in stored]
    try:
        with transaction.atomic():
            values_insert(RunStep, new)
    except IntegrityError:
        again = steps
    agent_id = steps[0]["agent_id"] if steps else ""
    # The analytics rollup: every step as written in, the rewritten ones as they were out.
    before = analytics.steps_stored_values(agent_id, [step["id"] for step in again])
    analytics.steps_recorded(agent_id, steps, before)
    if not again:
        return
    RunStep.objects.bulk_create(
        [new_row(RunStep, step) for step in again],
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["agent", "id"],
        update_fields=_STEP_UPDATE_FIELDS,
    )


def _drop_cycles(pool: dict[str, otlp.SpanData], drop) -> None:
    """Reject the spans whose parents lead back to themselves (never placeable)."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = done
    for start in list(pool):
        walk: list[str] = []
        current: str | None = start
        while current is not None and current in pool and current not in state:
            state[current] = 1
            walk.append(current)
            current = pool[current]["parent_span_id"]
        if current is not None and state.get(current) == 1:
            cycle = walk[walk.index(current) :]
            for span_id in cycle:
                drop(span_id, f"span {span_id}: its parents form a cycle.")
        for span_id in walk:
            state[span_id] = 2
