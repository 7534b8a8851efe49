"""The step rows of placed spans: built from the spans (whose run exists), the steps already
recorded looked up, new steps inserted and the others upserted, with the analytics rollup."""

from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction

from apps.activity import analytics, otlp, span_mapping
from apps.activity.models import Run, RunStep
from apps.activity.recording import Unit, new_row, step_bounded, values_insert
from apps.activity.search_index import step_search_fields
from apps.workspaces.models import Agent

_STEP_UPDATE_FIELDS = [
    "run_id", "parent_id", "trace_id", "kind", "name", "status", "error", "started_at",
    "ended_at", "duration_ms", "input", "output", "model_id", "input_tokens", "output_tokens",
    "total_tokens", "cache_read_tokens", "cache_write_tokens", "credits_charged",
    "first_token_ms", "finish_reason", "tool_name", "mcp_server", "query", "documents",
    "attributes", "truncated", "updated_at", "search_text", "search_config",
]  # fmt: skip


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
