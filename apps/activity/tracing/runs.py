"""Each trace's run, conversation, end user and messages recorded in one unit with the steps;
trace by trace when one cannot be recorded, so that only that trace's spans are rejected."""

from django.db import transaction

from apps.activity import otlp
from apps.activity.recording import Unit
from apps.activity.trace_locks import locks_take
from apps.activity.trace_runs import TraceFacts, run_of_trace
from apps.activity.tracing.result import SpansResult
from apps.common.errors import BadRequest
from apps.workspaces.models import Agent


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
