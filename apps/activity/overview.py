"""The Overview's numbers: runs, tokens, credits, latency, tools and users per day, in SQL.

Every query reads one Agent's runs in a date range through the (agent, -created_at, -id)
index. Percentiles use PostgreSQL's `percentile_cont`; on the SQLite embedded default they are
computed in Python over the range's latencies.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.db import connection
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDay
from django.utils import timezone

from apps.activity.models import Run, RunStatus
from apps.workspaces.models import Agent

PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30
STATUS_ORDER = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ABORTED, RunStatus.STREAMING)


@dataclass
class Overview:
    days: list[date]
    runs_by_status: dict[str, list[int]]
    tokens: list[int]
    credits: list[float]
    p50: list[float | None]
    p95: list[float | None]
    active_users: list[int]
    totals: dict = field(default_factory=dict)
    top_tools: list[tuple[str, int]] = field(default_factory=list)
    failing_tools: list[tuple[str, int]] = field(default_factory=list)
    # The same headline numbers over the period of equal length just before, and the change.
    previous: dict = field(default_factory=dict)
    changes: dict = field(default_factory=dict)
    # (model, runs, credits), most credits first.
    credits_by_model: list[tuple[str, int, float]] = field(default_factory=list)


# Whether a rise is good news (coloured green), bad news (red) or neither (no colour).
RISE_MEANS = {"runs": "good", "users": "good", "tokens": "neutral", "credits": "neutral"}


def change_between(current: float | None, previous: float | None, *, rise_means: str) -> dict:
    """The change from the previous period, as the Overview shows it. No previous activity
    gives no percentage (a rise from nothing has no meaningful size)."""
    current, previous = current or 0, previous or 0
    if not previous:
        return {"percent": None, "tone": "neutral"}
    percent = (current - previous) / previous * 100
    if abs(percent) < 0.05 or rise_means == "neutral":
        tone = "neutral"
    else:
        tone = "good" if (percent > 0) == (rise_means == "good") else "bad"
    return {"percent": percent, "tone": tone}


def _headline(runs) -> dict:
    return runs.aggregate(
        runs=Count("id"),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
        tokens=Sum("total_tokens"),
        credits=Sum("credits_charged"),
        users=Count("user_id", distinct=True),
    )


def _credits_by_model(runs) -> list[tuple[str, int, float]]:
    rows = (
        runs.values("model_id")
        .annotate(n=Count("id"), credits=Sum("credits_charged"))
        .order_by("-credits", "-n", "model_id")
    )
    return [
        (row["model_id"] or "unknown model", row["n"], round(row["credits"] or 0.0, 4))
        for row in rows
    ]


def _percentile(values: list[float], fraction: float) -> float | None:
    """Linear interpolation between closest ranks, as PostgreSQL's percentile_cont."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _latency_percentiles(runs, since: datetime) -> tuple[dict, tuple]:
    """({day: (p50, p95)}, (p50, p95) over the whole range)."""
    if connection.vendor == "postgresql":
        sql = (
            "SELECT date_trunc('day', created_at AT TIME ZONE 'UTC') AS day, "
            "percentile_cont(0.5) WITHIN GROUP (ORDER BY total_turn_latency_ms), "
            "percentile_cont(0.95) WITHIN GROUP (ORDER BY total_turn_latency_ms) "
            "FROM activity_run WHERE agent_id = %s AND created_at >= %s "
            "AND total_turn_latency_ms IS NOT NULL GROUP BY ROLLUP (1)"
        )
        per_day, overall = {}, (None, None)
        with connection.cursor() as cursor:
            cursor.execute(sql, [runs.agent_id, since])
            for day, p50, p95 in cursor.fetchall():
                if day is None:
                    overall = (p50, p95)
                else:
                    per_day[day.date()] = (p50, p95)
        return per_day, overall
    grouped: dict[date, list[float]] = defaultdict(list)
    every: list[float] = []
    for created_at, latency in runs.queryset.values_list("created_at", "total_turn_latency_ms"):
        if latency is not None:
            grouped[created_at.date()].append(latency)
            every.append(latency)
    per_day = {
        day: (_percentile(values, 0.5), _percentile(values, 0.95))
        for day, values in grouped.items()
    }
    return per_day, (_percentile(every, 0.5), _percentile(every, 0.95))


_TOOL_SQL = {
    # The column is one of two constants below, never user input.
    ("postgresql", "tool_names"): "jsonb_array_elements_text(tool_names) AS tool(value)",
    (
        "postgresql",
        "failed_tool_names",
    ): "jsonb_array_elements_text(failed_tool_names) AS tool(value)",
    ("sqlite", "tool_names"): "json_each(tool_names) AS tool",
    ("sqlite", "failed_tool_names"): "json_each(failed_tool_names) AS tool",
}


def _tool_counts(agent_id: str, since: datetime, column: str) -> list[tuple[str, int]]:
    source = _TOOL_SQL[(connection.vendor, column)]
    sql = (
        "SELECT tool.value, count(*) FROM activity_run, "  # noqa: S608 - constant fragments
        + source
        + " WHERE agent_id = %s AND created_at >= %s GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 8"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent_id, since])
        return [(name, count) for name, count in cursor.fetchall()]


@dataclass
class _Runs:
    agent_id: str
    queryset: object


def overview_get(*, agent: Agent, days: int = DEFAULT_PERIOD) -> Overview:
    today = timezone.now().date()
    first_day = today - timedelta(days=days - 1)
    since = datetime(first_day.year, first_day.month, first_day.day, tzinfo=UTC)
    runs = Run.objects.filter(agent=agent, created_at__gte=since)
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    index = {day: i for i, day in enumerate(day_list)}

    by_status = {status.value: [0] * days for status in STATUS_ORDER}
    rows = (
        runs.annotate(day=TruncDay("created_at"))
        .values("day", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        position = index.get(row["day"].date())
        if position is not None:
            by_status[row["status"]][position] = row["n"]

    tokens, credits, active = [0] * days, [0.0] * days, [0] * days
    per_day_totals = (
        runs.annotate(day=TruncDay("created_at"))
        .values("day")
        .annotate(
            tokens=Sum("total_tokens"),
            credits=Sum("credits_charged"),
            users=Count("user_id", distinct=True),
        )
        .order_by()
    )
    for total in per_day_totals:
        position = index.get(total["day"].date())
        if position is not None:
            tokens[position] = total["tokens"] or 0
            credits[position] = round(total["credits"] or 0.0, 2)
            active[position] = total["users"]

    per_day, (p50_all, p95_all) = _latency_percentiles(_Runs(agent.pk, runs), since)
    p50 = [per_day.get(day, (None, None))[0] for day in day_list]
    p95 = [per_day.get(day, (None, None))[1] for day in day_list]

    totals = _headline(runs)
    previous = _headline(
        Run.objects.filter(
            agent=agent, created_at__gte=since - timedelta(days=days), created_at__lt=since
        )
    )
    changes = {
        name: change_between(totals[name], previous[name], rise_means=meaning)
        for name, meaning in RISE_MEANS.items()
    }
    totals["failure_rate"] = (totals["failed"] / totals["runs"] * 100) if totals["runs"] else 0.0
    totals["p50"], totals["p95"] = p50_all, p95_all
    return Overview(
        days=day_list,
        runs_by_status=by_status,
        tokens=tokens,
        credits=credits,
        p50=p50,
        p95=p95,
        active_users=active,
        totals=totals,
        top_tools=_tool_counts(agent.pk, since, "tool_names"),
        failing_tools=_tool_counts(agent.pk, since, "failed_tool_names"),
        previous=previous,
        changes=changes,
        credits_by_model=_credits_by_model(runs),
    )
