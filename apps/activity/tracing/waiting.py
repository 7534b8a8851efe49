"""The spans that wait for their parents (`PendingSpan` rows): loaded with their traces, kept
within MAX_PENDING_SPANS_PER_TRACE, forgotten once placed or rejected."""

from datetime import datetime

from apps.activity import otlp
from apps.activity.models import PendingSpan
from apps.activity.tracing.result import SpansResult
from apps.workspaces.models import Agent

# Spans of one trace waiting for their parents: what a request loads of its traces is bounded.
MAX_PENDING_SPANS_PER_TRACE = 10_000


def _pending_load(agent: Agent, trace_ids: set[str]) -> dict[str, otlp.SpanData]:
    """The spans of these traces that wait for their parents, by span id."""
    pool: dict[str, otlp.SpanData] = {}
    for row in PendingSpan.objects.filter(agent=agent, trace_id__in=trace_ids).values_list(
        "span", flat=True
    ):
        pool[row["span_id"]] = row
    return pool


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
