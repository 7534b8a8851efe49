"""A request's spans recorded, stage by stage, in one transaction: the waiting spans of their
traces loaded, the unplaceable rejected, the rest placed under their runs, the runs and steps
written, what cannot be placed yet kept waiting."""

from django.db import transaction
from django.utils import timezone

from apps.activity import otlp
from apps.activity.orphan_spans import orphan_tool_calls_attach
from apps.activity.trace_locks import locks_take
from apps.activity.tracing.placing import (
    _drop_cycles,
    _dropper,
    _foreign_drop,
    _spans_place,
    _traces_of,
)
from apps.activity.tracing.result import SpansResult
from apps.activity.tracing.runs import _runs_of_traces
from apps.activity.tracing.steps import _steps_of, steps_stored, steps_write
from apps.activity.tracing.waiting import _pending_load, _pending_write
from apps.workspaces.models import Agent


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
