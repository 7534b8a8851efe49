"""Recording runs the way the runtime does (through the recording service), and the rollup's
state as comparable data, so tests can check the rollup against a rebuild and against sums
over the runs."""

import itertools
from datetime import datetime

from django.db.models import Sum

from apps.activity.records import records_parse
from apps.activity.services import activity_record
from apps.usage.models import DailyLatency, DailyUsage

_counter = itertools.count(1)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def record(agent, *raw) -> None:
    activity_record(agent=agent, records=records_parse(list(raw)))


def conversation(agent, *, at: datetime) -> str:
    conversation_id = f"conv_u{next(_counter)}"
    record(agent, {"type": "conversation", "id": conversation_id, "created_at": iso(at)})
    return conversation_id


def record_run(agent, *, at: datetime, conversation_id: str | None = None, **fields) -> str:
    """Record one run (default: completed, with tokens, credits and latency); returns its id."""
    run_id = fields.pop("id", None) or f"run_u{next(_counter)}"
    data = {
        "type": "run",
        "id": run_id,
        "conversation_id": conversation_id or conversation(agent, at=at),
        "request_id": f"req_{run_id}",
        "sdk_version": "5.0.0",
        "created_at": iso(at),
        "status": "completed",
        "input_tokens": 1000,
        "output_tokens": 200,
        "total_tokens": 1200,
        "cache_read_tokens": 100,
        "cache_write_tokens": 10,
        "credits_charged": 1.25,
        "total_turn_latency_ms": 2400.0,
    }
    data.update(fields)
    record(agent, {key: value for key, value in data.items() if value is not ...})
    return run_id


def rollup_state() -> tuple[list, list]:
    """Every rollup row as plain tuples, in key order: the stripes of an Agent and day (and
    bucket) summed, as every reader sums them (apps.usage.models), and sums of nothing left
    out, as a rebuild never writes them."""
    counters = (
        "runs", "completed_runs", "failed_runs", "aborted_runs", "streaming_runs", "input_tokens",
        "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens",
        "credits_charged",
    )  # fmt: skip
    daily = sorted(
        tuple(row.values())
        for row in DailyUsage.objects.values("agent_id", "workspace_id", "day")
        .annotate(**{f"sum_{name}": Sum(name) for name in counters})
        .order_by()
        if any(row[f"sum_{name}"] for name in counters)
    )
    latency = sorted(
        DailyLatency.objects.values_list("agent_id", "workspace_id", "day", "bucket")
        .annotate(Sum("runs"))
        .exclude(runs__sum=0)
        .order_by()
    )
    return daily, latency
