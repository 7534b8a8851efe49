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
"""

import heapq
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from apps.activity import analytics, otlp
from apps.activity.models import Conversation, Message, PendingSpan, Run, RunStep
from apps.activity.recording import (
    MAX_STEP_DEPTH,
    Unit,
    Wanted,
    new_row,
    step_bounded,
    values_insert,
)
from apps.activity.search_index import step_search_fields
from apps.common.errors import BadRequest
from apps.workspaces.models import Agent

# Spans nest at most as deep as steps recorded through /v1/ingest may (counted within what one
# request can see: its spans and those waiting in their traces).
MAX_SPAN_DEPTH = MAX_STEP_DEPTH
# Spans of one trace waiting for their parents: what a request loads of its traces is bounded.
MAX_PENDING_SPANS_PER_TRACE = 10_000
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$")
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


def _locks_take(agent: Agent, names: set[str]) -> None:
    """Serialise requests touching the same traces (or end user, or conversation) until they
    commit: a child and its parent sent at once (exporters send each span as it ends) must not
    both miss the other, and two traces must not both create one conversation."""
    if connection.vendor != "postgresql" or not names:
        return
    keys = sorted(f"{agent.pk}:{name}" for name in names)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(key, 25)) "
            "FROM unnest(%s::text[]) AS key ORDER BY key",
            [keys],
        )


def _spans_record(agent: Agent, spans: list[otlp.SpanData], result: SpansResult) -> None:
    incoming = {span["span_id"]: span for span in spans}  # a repeated span: the last one counts
    trace_ids = {span["trace_id"] for span in incoming.values()}
    _locks_take(agent, trace_ids)
    pool: dict[str, otlp.SpanData] = {}
    for row in PendingSpan.objects.filter(agent=agent, trace_id__in=trace_ids).values_list(
        "span", flat=True
    ):
        pool[row["span_id"]] = row
    orphans = _orphan_tool_calls_attach(agent, incoming, pool)
    waiting_before = set(pool)
    pool.update(incoming)
    wanted = set(pool) | {
        span["parent_span_id"] for span in pool.values() if span["parent_span_id"]
    }
    stored = _steps_stored(agent, wanted)

    def drop(span_id: str, message: str) -> None:
        if span_id in incoming:
            result.reject(1, message)
        pool.pop(span_id, None)

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
    _drop_cycles(pool, drop)

    # Which run each span belongs to: the trace's, once its chain reaches a root or a step.
    # Each span is walked once: a walk stops at a span already placed or already known to wait.
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

    # The trace's roots (normally one), in the order they came.
    roots: dict[str, list[otlp.SpanData]] = {}
    by_run: dict[str, list[otlp.SpanData]] = {}
    for span_id, span in pool.items():
        if span_id in placed:
            by_run.setdefault(placed[span_id], []).append(span)
            if span["parent_span_id"] is None:
                roots.setdefault(span["trace_id"], []).append(span)
    traces = [(trace_roots, by_run.get(trace_id, [])) for trace_id, trace_roots in roots.items()]
    unit, failed_runs = _runs_of_traces(agent, traces, incoming, result)
    run_ids = {run_id for run_id in placed.values() if run_id not in failed_runs}
    # The runs the unit holds exist (locked, or created by it); only the others are looked up.
    held = {run_id for run_id in run_ids if unit.rows[Run].get(run_id) is not None}
    existing_runs = held | set(
        Run.objects.filter(agent=agent, id__in=run_ids - held).values_list("id", flat=True)
    )
    now = timezone.now()
    steps = [
        _step_values(
            *step_bounded(otlp.step_fields(pool[span_id])), agent=agent, run_id=run_id, now=now
        )  # fmt: skip
        for span_id, run_id in placed.items()
        if run_id in existing_runs
    ]
    _steps_write(steps, stored=stored)
    recorded = {step["id"] for step in steps}
    result.recorded = len(recorded & set(incoming))
    waiting = [
        span for span_id, span in pool.items() if span_id not in recorded and span_id not in placed
    ]
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
    gone = (waiting_before - {span["span_id"] for span in waiting}) | (set(incoming) - set(pool))
    if gone:
        PendingSpan.objects.filter(agent=agent, span_id__in=gone).delete()
    unit.stepped |= {step["run_id"] for step in steps}
    unit.flush()


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
    facts = [_TraceFacts.of(roots, trace) for roots, trace in traces]
    _locks_take(
        agent,
        {f"user:{fact.external_id}" for fact in facts if fact.external_id is not None}
        | {f"conversation:{fact.conversation_id}" for fact in facts},
    )
    unit = Unit(agent)
    try:
        with transaction.atomic():
            unit.prefetch(_TraceFacts.wanted(facts))
            for fact in facts:
                _run_of_trace(unit, fact)
        return unit, set()
    except BadRequest:
        pass
    failed: set[str] = set()
    for fact in facts:
        try:
            with transaction.atomic():
                alone = Unit(agent)
                _run_of_trace(alone, fact)
                alone.flush()
        except BadRequest as exc:
            failed.add(fact.trace_id)
            count = sum(1 for span in fact.trace if span["span_id"] in incoming)
            result.reject(count, f"trace {fact.trace_id}: {exc.message}")
    return Unit(agent), failed


def _step_values(
    fields: dict[str, Any], cut: list[str], *, agent: Agent, run_id: str, now: datetime
) -> dict[str, Any]:
    """A step row by attribute name (`recording.new_row`'s and `values_insert`'s `values`),
    from a span's bounded fields (`step_bounded(otlp.step_fields(span))`)."""
    fields.update(agent_id=agent.pk, run_id=run_id, created_at=now, updated_at=now, truncated=cut)
    fields.update(step_search_fields(fields))
    ended = fields["ended_at"]
    if ended is not None and fields.get("duration_ms") is None:
        fields["duration_ms"] = (ended - fields["started_at"]).total_seconds() * 1000
    return fields


def _steps_stored(agent: Agent, ids: set[str]) -> dict[str, tuple[str | None, str]]:
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


def _steps_write(steps: list[dict[str, Any]], *, stored: dict) -> None:
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


@dataclass
class ExpiredSpans:
    recorded: int = 0
    dropped: int = 0


def pending_spans_expire(*, now: datetime | None = None, limit: int = 500) -> ExpiredSpans:
    """Stop waiting for parents that never came: the oldest `limit` spans received more than
    OTLP_PENDING_SPAN_TTL_SECONDS ago are recorded as steps of their trace's run when it exists
    (under their parent when that is recorded, else at the top, the missing parent kept as the
    attribute `otel.parent_span_id`), and dropped otherwise. Claimed with SKIP LOCKED, and under
    the traces' locks that requests placing spans take, so a span is never placed twice."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.OTLP_PENDING_SPAN_TTL_SECONDS)
    result = ExpiredSpans()
    with transaction.atomic():
        claimed = list(
            PendingSpan.objects.select_for_update(skip_locked=True)
            .filter(received_at__lt=cutoff)
            .order_by("received_at", "row")[:limit]
        )
        by_agent: dict[str, list[PendingSpan]] = {}
        for pending in claimed:
            by_agent.setdefault(pending.agent_id, []).append(pending)
        for agent_id, rows in by_agent.items():
            agent = Agent.objects.get(pk=agent_id)
            recorded = _expired_record(agent, [row.span for row in rows])
            result.recorded += recorded
            result.dropped += len(rows) - recorded
        PendingSpan.objects.filter(row__in=[pending.row for pending in claimed]).delete()
    return result


def _expired_record(agent: Agent, spans: list[otlp.SpanData]) -> int:
    """Record the expired spans of one Agent whose run exists; returns how many."""
    _locks_take(agent, {span["trace_id"] for span in spans})
    runs = set(
        Run.objects.filter(agent=agent, id__in={span["trace_id"] for span in spans}).values_list(
            "id", flat=True
        )
    )
    spans = [span for span in spans if span["trace_id"] in runs]
    ids = {span["span_id"] for span in spans}
    parents = {span["parent_span_id"] for span in spans} - ids - {None}
    stored = _steps_stored(agent, ids | parents)
    now = timezone.now()
    steps = []
    for span in spans:
        fields, cut = step_bounded(otlp.step_fields(span))
        parent = fields.get("parent_id")
        if (
            parent is not None
            and parent not in ids
            and stored.get(parent, (None, None))[1] != span["trace_id"]
        ):
            fields["parent_id"] = None
            fields["attributes"] = {**fields.get("attributes", {}), "otel.parent_span_id": parent}
        steps.append(_step_values(fields, cut, agent=agent, run_id=span["trace_id"], now=now))
    _steps_write(steps, stored=stored)
    unit = Unit(agent)
    unit.stepped = {step["run_id"] for step in steps}
    unit.flush()
    return len(steps)


_CONVERSATION_KEYS = ("conversationId", "conversation_id", "chatId", "gen_ai.conversation.id")


def _orphan_tool_calls_attach(
    agent: Agent, incoming: dict[str, otlp.SpanData], pool: dict[str, otlp.SpanData]
) -> dict[str, str]:
    """Give the AI SDK's detached tool calls back to their run.

    `streamText` runs a tool while its result stream is read, outside the span that asked for
    it, so `ai.toolCall` arrives as the root of a trace of its own. Such a span, when it names
    its conversation, belongs to the run of that conversation that was running when the tool
    started: an agent root span of this request or a recorded run, or else the next such run
    to arrive (it waits in PendingSpan with its conversation). It is re-parented under that
    run's root, its own trace id kept as the `otel.trace_id` attribute.

    Returns the orphans still waiting: span id -> conversation id. Adopted waiting orphans
    are added to `pool`."""
    roots = [
        span
        for span in incoming.values()
        if span["parent_span_id"] is None and otlp.span_kind(span) == "agent"
    ]
    root_conversations = {otlp.metadata(root, *_CONVERSATION_KEYS) for root in roots} - {None}
    orphans = [
        span
        for span in incoming.values()
        if span["parent_span_id"] is None
        and span["name"] == "ai.toolCall"
        and otlp.metadata(span, *_CONVERSATION_KEYS) is not None
    ]
    conversations = root_conversations | {
        otlp.metadata(span, *_CONVERSATION_KEYS) for span in orphans
    }
    _locks_take(agent, {f"orphans:{conversation}" for conversation in conversations})
    if root_conversations:
        for span in PendingSpan.objects.filter(
            agent=agent, conversation_id__in=root_conversations
        ).values_list("span", flat=True):
            if span["span_id"] not in incoming:
                orphans.append(span)
                pool[span["span_id"]] = span
    by_conversation: dict[str, list[tuple[Any, Any, Any, tuple[str, str]]]] = {}
    for order, root in enumerate(roots):
        conversation = otlp.metadata(root, *_CONVERSATION_KEYS)
        if conversation is not None:
            end = int(root["end"]) if root["end"] else None
            by_conversation.setdefault(conversation, []).append(
                (int(root["start"]), end, order, (root["trace_id"], root["span_id"]))
            )
    owners = _latest_running(
        by_conversation,
        [(otlp.metadata(orphan, *_CONVERSATION_KEYS), int(orphan["start"]), orphan["span_id"])
         for orphan in orphans],
    )  # fmt: skip
    owners.update(
        _recorded_owners(agent, [orphan for orphan in orphans if orphan["span_id"] not in owners])
    )
    waiting: dict[str, str] = {}
    for orphan in orphans:
        conversation = otlp.metadata(orphan, *_CONVERSATION_KEYS)
        assert conversation is not None
        owner = owners.get(orphan["span_id"])
        if owner is None:
            waiting[orphan["span_id"]] = conversation
        elif owner[0] != orphan["trace_id"]:
            orphan["attributes"]["otel.trace_id"] = orphan["trace_id"]
            orphan["trace_id"], orphan["parent_span_id"] = owner
    return waiting


def _latest_running(
    intervals: dict[Any, list[tuple[Any, Any, Any, Any]]], points: list[tuple[Any, Any, Any]]
) -> dict[Any, Any]:
    """For each point (group, instant, key): the owner of the interval of its group running at
    that instant (start <= instant <= end, an end of None running still) that started last
    (then the last in order). Intervals are (start, end, order, owner). One sweep per group in
    time order with a heap of the intervals started, those ended dropped from its top: linear
    but for the sorting, however many intervals and points a request carries."""
    wanted: dict[Any, list[tuple[Any, Any]]] = {}
    for group, instant, key in points:
        if group in intervals:
            wanted.setdefault(group, []).append((instant, key))
    owners: dict[Any, Any] = {}
    for group, instants in wanted.items():
        started = sorted(intervals[group], key=lambda interval: (interval[0], interval[2]))
        running: list[tuple[_Reversed, _Reversed, int, Any, Any]] = []
        next_start = 0
        for instant, key in sorted(instants, key=lambda item: item[0]):
            while next_start < len(started) and started[next_start][0] <= instant:
                start, end, order, owner = started[next_start]
                entry = (_Reversed(start), _Reversed(order), next_start, end, owner)
                heapq.heappush(running, entry)
                next_start += 1
            while running and running[0][3] is not None and running[0][3] < instant:
                heapq.heappop(running)
            if running:
                owners[key] = running[0][4]
    return owners


class _Reversed:
    """Orders its value backwards (a max-heap of values that cannot be negated: datetimes)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: "_Reversed") -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value


def _recorded_owners(agent: Agent, orphans: list[otlp.SpanData]) -> dict[str, tuple[str, str]]:
    """span id -> (trace id, root span id) of the recorded run of the orphan's conversation
    running at its start (the one created last), for the orphans that have one: two queries
    whatever their number."""
    if not orphans:
        return {}
    starts = {orphan["span_id"]: otlp.started_at(orphan) for orphan in orphans}
    points = [(otlp.metadata(orphan, *_CONVERSATION_KEYS), starts[orphan["span_id"]],
               orphan["span_id"]) for orphan in orphans]  # fmt: skip
    intervals: dict[Any, list[tuple[Any, Any, Any, Any]]] = {}
    for run_id, conversation, created, completed in (
        Run.objects.filter(
            agent=agent,
            conversation_id__in={conversation for conversation, _at, _key in points},
            created_at__lte=max(starts.values()),
        )
        .filter(
            models.Q(completed_at__isnull=True) | models.Q(completed_at__gte=min(starts.values()))
        )
        .values_list("id", "conversation_id", "created_at", "completed_at")
    ):
        intervals.setdefault(conversation, []).append((created, completed, run_id, run_id))
    runs = _latest_running(intervals, points)
    if not runs:
        return {}
    root_steps = RunStep.objects.filter(agent=agent, run_id__in=set(runs.values()), parent_id=None)
    root_steps = root_steps.order_by("run_id", "started_at", "id")
    if connection.vendor == "postgresql":
        root_steps = root_steps.distinct("run_id")  # the first root step of each run only
    first: dict[str, tuple[str, str]] = {}
    for run_id, trace_id, step_id in root_steps.values_list("run_id", "trace_id", "id"):
        if trace_id:
            first.setdefault(run_id, (trace_id, step_id))
    return {key: first[run_id] for key, run_id in runs.items() if run_id in first}


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


@dataclass
class _TraceFacts:
    """What a trace says about its run, read off its spans."""

    root: otlp.SpanData
    trace: list[otlp.SpanData]
    head: otlp.SpanData
    trace_id: str
    external_id: str | None
    conversation_id: str

    @classmethod
    def of(cls, roots: list[otlp.SpanData], trace: list[otlp.SpanData]) -> "_TraceFacts":
        """Read once per trace, whatever its number of roots (a trace has one; when spans
        without a parent share a trace id, the first to start is the run's root)."""
        root = min(roots, key=lambda span: (int(span["start"]), span["span_id"]))
        agent_spans = [span for span in trace if otlp.span_kind(span) == "agent"]
        ordered = [root, *sorted(agent_spans, key=lambda span: span["start"]), *trace]

        def find(*names: str) -> str | None:
            for span in ordered:
                value = otlp.metadata(span, *names)
                if value is not None:
                    return value
            return None

        trace_id = root["trace_id"]
        conversation_id = find("gen_ai.conversation.id", "conversationId", "conversation_id",
                               "chatId", "session.id")  # fmt: skip
        if conversation_id is None or not _ID.match(conversation_id):
            conversation_id = f"otel-{trace_id}"
        return cls(
            root=root,
            trace=trace,
            head=agent_spans[0] if agent_spans else root,
            trace_id=trace_id,
            external_id=find("userId", "user_id", "user.id", "enduser.id"),
            conversation_id=conversation_id,
        )

    @staticmethod
    def wanted(facts: list["_TraceFacts"]) -> Wanted:
        wanted = Wanted.empty()
        for fact in facts:
            if fact.external_id is not None:
                wanted.external_ids.add(fact.external_id)
            wanted.lock(Conversation, fact.conversation_id)
            wanted.lock(Run, fact.trace_id)
            for suffix in ("in", "out"):
                wanted.lock(Message, f"{fact.head['span_id']}-{suffix}")
        return wanted


def _run_of_trace(unit: Unit, fact: _TraceFacts) -> None:
    """Record (or update) the trace's run, its conversation, end user and messages."""
    root, trace, trace_id, conversation_id = (
        fact.root,
        fact.trace,
        fact.trace_id,
        fact.conversation_id,
    )
    fields = otlp.step_fields(root)
    started, ended = fields["started_at"], fields["ended_at"]
    user_id = None
    if fact.external_id is not None:
        unit.record(
            "user", {"external_id": fact.external_id, "last_seen_at": ended or started}, "record"
        )
        user = unit.user_by_external_id(fact.external_id)
        assert user is not None
        user_id = user.id
    question, answer = otlp.messages_of(fact.head)
    status = {"failed": "failed", "completed": "completed"}.get(fields["status"], "streaming")
    conversation = {"id": conversation_id, "status": status}
    if unit.get(Conversation, conversation_id) is None:
        conversation["created_at"] = started
        if question:
            conversation["title"] = question[:500]
    if user_id is not None:
        conversation["user_id"] = user_id
    unit.record("conversation", conversation, "record")
    resource = root["resource"]
    sdk = "-".join(
        str(resource[key])
        for key in ("telemetry.sdk.name", "telemetry.sdk.version")
        if resource.get(key)
    )
    run: dict[str, Any] = {
        "id": trace_id,
        "conversation_id": conversation_id,
        "request_id": trace_id,
        "sdk_version": otlp.sdk_version(trace) or (sdk or root["scope"] or "otlp")[:64],
        "created_at": started,
        **otlp.run_dimensions([root, fact.head, *trace]),
    }
    if user_id is not None:
        run["user_id"] = user_id
    existing = unit.get(Run, trace_id)
    if existing is None or existing.status == "streaming":
        run["status"] = status
    if ended is not None:
        run["completed_at"] = ended
        run["total_turn_latency_ms"] = (ended - started).total_seconds() * 1000
    if status == "failed":
        run["error_code"] = otlp.error_code(root)
    first_tokens = [
        (otlp.started_at(span), ms)
        for span in trace
        if isinstance(ms := span["attributes"].get("ai.response.msToFirstChunk"), int | float)
        and otlp.span_kind(span) == "model"
    ]
    if first_tokens:
        start, ms = min(first_tokens, key=lambda item: item[0])
        run["first_chunk_at"] = start + timedelta(milliseconds=ms)
    unit.record("run", run, f"trace {trace_id}")
    head_id = fact.head["span_id"]
    if question:
        unit.record(
            "message",
            {"id": f"{head_id}-in", "conversation_id": conversation_id, "role": "user",
             "parts": [{"type": "text", "text": question}], "created_at": started},
            "record",
        )  # fmt: skip
    if answer:
        unit.record(
            "message",
            {"id": f"{head_id}-out", "conversation_id": conversation_id, "role": "assistant",
             "parts": [{"type": "text", "text": answer}], "run_id": trace_id,
             "created_at": ended or started},
            "record",
        )  # fmt: skip
