"""Spans whose parent never came: after OTLP_PENDING_SPAN_TTL_SECONDS they are recorded at the
top of their trace's run, or dropped when the run is unknown (apps.activity.tracing keeps them
waiting until then).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.activity import otlp, span_mapping
from apps.activity.models import PendingSpan, Run
from apps.activity.recording import Unit, step_bounded
from apps.activity.trace_locks import locks_take
from apps.activity.tracing import step_values, steps_stored, steps_write
from apps.workspaces.models import Agent


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
    locks_take(agent, {span["trace_id"] for span in spans})
    runs = set(
        Run.objects.filter(agent=agent, id__in={span["trace_id"] for span in spans}).values_list(
            "id", flat=True
        )
    )
    spans = [span for span in spans if span["trace_id"] in runs]
    ids = {span["span_id"] for span in spans}
    parents = {span["parent_span_id"] for span in spans} - ids - {None}
    stored = steps_stored(agent, ids | parents)
    now = timezone.now()
    steps = []
    for span in spans:
        fields, cut = step_bounded(span_mapping.step_fields(span))
        parent = fields.get("parent_id")
        if (
            parent is not None
            and parent not in ids
            and stored.get(parent, (None, None))[1] != span["trace_id"]
        ):
            fields["parent_id"] = None
            fields["attributes"] = {**fields.get("attributes", {}), "otel.parent_span_id": parent}
        steps.append(step_values(fields, cut, agent=agent, run_id=span["trace_id"], now=now))
    steps_write(steps, stored=stored)
    unit = Unit(agent)
    unit.stepped = {step["run_id"] for step in steps}
    unit.flush()
    return len(steps)
