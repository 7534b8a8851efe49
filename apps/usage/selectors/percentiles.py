"""Turn latency percentiles computed in the database: each group's histogram summed there and its
p50 and p95 buckets picked there, from the daily rows or, on PostgreSQL, the sealed tiers."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import connection

from apps.usage.days import month_start, next_month
from apps.usage.latency import bucket_value
from apps.usage.selectors.scope import Period
from apps.workspaces.models import Agent, Workspace

# Each group's histogram summed in the database, and its p50 and p95 buckets picked there by the
# reference rule of apps.usage.latency (_PERCENTILE_BUCKETS): one row per group travels.
# Groupings: `total`, `agent`, `series` (per day or ISO week) and, when asked, `agent_day`.
# Every fragment formatted in is one of the constants here, never input.
_WEEK_START = {
    "postgresql": "day - (extract(isodow FROM day)::int - 1)",
    "sqlite": "date(day, '-' || ((CAST(strftime('%%w', day) AS integer) + 6) %% 7) || ' days')",
}
_GROUPINGS = """
SELECT 'total', '', CAST(NULL AS date), bucket, sum(runs) FROM per_agent GROUP BY bucket
UNION ALL
SELECT 'agent', agent_id, CAST(NULL AS date), bucket, sum(runs) FROM per_agent
GROUP BY agent_id, bucket
UNION ALL
SELECT 'series', '', {series_key}, bucket, sum(runs) FROM per_day GROUP BY {series_key}, bucket
"""
_AGENT_DAY_GROUPING = """
UNION ALL
SELECT 'agent_day', agent_id, day, bucket, sum(runs) FROM scoped GROUP BY agent_id, day, bucket
"""
# Each group's p50 and p95 bucket by the nearest-rank rule of apps.usage.latency.percentiles:
# the first bucket (in order) whose running count reaches ceil(p * n / 100), i.e. whose running
# count times 100 is at least p * n. Two buckets per group travel, not its whole histogram
# (a year by day is 366 groups of ~50 buckets).
_PERCENTILE_BUCKETS = """
, histograms (grp, agent_key, day_key, bucket, runs) AS ({groupings}),
ranked AS (
    SELECT grp, agent_key, day_key, bucket,
        sum(runs) OVER (PARTITION BY {group_key} ORDER BY bucket) AS seen,
        sum(runs) OVER (PARTITION BY {group_key}) AS total
    FROM histograms WHERE runs > 0
)
SELECT grp, agent_key, day_key,
    min(bucket) FILTER (WHERE seen * 100 >= 50 * total),
    min(bucket) FILTER (WHERE seen * 100 >= 95 * total)
FROM ranked GROUP BY grp, agent_key, day_key
"""
# The groups are sorted by their key: byte order, not the database's collation (a year by day
# sorts 18,000 rows; with a linguistic collation that sort was a third of the query's time).
_GROUP_KEY = {
    "postgresql": 'grp COLLATE "C", agent_key COLLATE "C", day_key',
    "sqlite": "grp, agent_key, day_key",
}
# The daily rows only (SQLite, where no tier is built). The CTE is scanned once (PostgreSQL
# materialises a CTE used more than once).
_DAILY_HISTOGRAMS_SQL = """
WITH scoped AS (
    SELECT agent_id, day, bucket, runs FROM usage_dailylatency
    WHERE workspace_id = %(workspace)s AND day >= %(start)s AND day <= %(end)s {agent_filter}
),
per_agent AS (SELECT agent_id, bucket, runs FROM scoped),
per_day AS (SELECT day, bucket, runs FROM scoped)
{percentiles}
"""
# PostgreSQL: per month of the period, the sealed tier (apps.usage.tiers) where its seal is
# current, the daily rows elsewhere, all in one statement (one snapshot): a month the period
# covers whole gives the totals and per-Agent figures from one row per Agent and bucket, and
# a sealed month's days give the series from one row per day and bucket, whatever the number
# of Agents. The LATERAL subqueries make each month one index range.
_TIERED_HISTOGRAMS_SQL = """
WITH months AS (
    SELECT m.month, greatest(m.month, %(start)s) AS first,
        least((m.month + interval '1 month')::date - 1, %(end)s) AS last,
        coalesce(seal.built_version = seal.version, false) AS sealed
    FROM unnest(%(months)s::date[]) AS m(month)
    LEFT JOIN usage_latencymonth seal
        ON seal.workspace_id = %(workspace)s AND seal.month = m.month
),
whole AS (
    SELECT month, first, last, sealed,
        sealed AND first = month AND last = (month + interval '1 month')::date - 1 AS whole
    FROM months
),
daily AS MATERIALIZED (
    SELECT found.agent_id, found.day, found.bucket, found.runs, whole.sealed
    FROM whole CROSS JOIN LATERAL (
        SELECT agent_id, day, bucket, runs FROM usage_dailylatency
        WHERE workspace_id = %(workspace)s AND day >= whole.first AND day <= whole.last
        {agent_filter}
    ) found WHERE NOT whole.whole
),
per_agent AS (
    SELECT tier.agent_id, tier.bucket, tier.runs FROM whole CROSS JOIN LATERAL (
        SELECT agent_id, bucket, runs FROM usage_monthlylatency
        WHERE workspace_id = %(workspace)s AND month = whole.month {agent_filter}
    ) tier WHERE whole.whole
    UNION ALL
    SELECT agent_id, bucket, runs FROM daily
),
scoped AS (
    SELECT agent_id, day, bucket, runs FROM usage_dailylatency
    WHERE workspace_id = %(workspace)s AND day >= %(start)s AND day <= %(end)s {agent_filter}
),
per_day AS ({per_day})
{percentiles}
"""
_PER_DAY_TIERED = """
    SELECT tier.day, tier.bucket, tier.runs FROM months CROSS JOIN LATERAL (
        SELECT day, bucket, runs FROM usage_workspacedailylatency
        WHERE workspace_id = %(workspace)s AND day >= months.first AND day <= months.last
    ) tier WHERE months.sealed
    UNION ALL
    SELECT day, bucket, runs FROM daily WHERE NOT sealed
"""
# By day: a sealed day's percentiles were picked at sealing; only the other days are ranked.
_PER_DAY_UNSEALED = "SELECT day, bucket, runs FROM daily WHERE NOT sealed"
_SEALED_DAY_PERCENTILES = """
UNION ALL
SELECT 'series', '', picked.day, picked.p50_bucket, picked.p95_bucket
FROM months CROSS JOIN LATERAL (
    SELECT day, p50_bucket, p95_bucket FROM usage_workspacedaypercentiles
    WHERE workspace_id = %(workspace)s AND day >= months.first AND day <= months.last
) picked WHERE months.sealed
"""
# One Agent's series: the workspace's per-day tier sums every Agent, so its daily rows.
_PER_DAY_OF_AGENT = "SELECT day, bucket, runs FROM scoped"


def percentile_of(bucket: int) -> float:
    """A percentile's bucket as apps.usage.latency.percentiles reports it."""
    return round(bucket_value(bucket), 1)


def _as_date(value) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def _months(period: Period) -> list[date]:
    months, month = [], month_start(period.start)
    while month <= period.end:
        months.append(month)
        month = next_month(month)
    return months


def _histograms_sql(*, period: Period, agent: Agent | None, per_agent_day: bool) -> str:
    series_key = "day" if period.granularity == "day" else _WEEK_START[connection.vendor]
    groupings = _GROUPINGS.format(series_key=series_key)
    if per_agent_day:
        groupings += _AGENT_DAY_GROUPING
    percentiles_sql = _PERCENTILE_BUCKETS.format(
        groupings=groupings, group_key=_GROUP_KEY[connection.vendor]
    )
    agent_filter = "AND agent_id = %(agent)s" if agent is not None else ""
    if connection.vendor != "postgresql":
        return _DAILY_HISTOGRAMS_SQL.format(agent_filter=agent_filter, percentiles=percentiles_sql)
    if agent is not None:
        per_day = _PER_DAY_OF_AGENT
    elif period.granularity == "day":
        per_day, percentiles_sql = _PER_DAY_UNSEALED, percentiles_sql + _SEALED_DAY_PERCENTILES
    else:
        per_day = _PER_DAY_TIERED
    return _TIERED_HISTOGRAMS_SQL.format(
        agent_filter=agent_filter, per_day=per_day, percentiles=percentiles_sql
    )


def _latency_percentiles(
    *, workspace: Workspace, period: Period, agent: Agent | None, per_agent_day: bool
) -> dict[tuple[str, str, date | None], tuple[float | None, float | None]]:
    """{(grouping, agent_id or "", day or week start or None): (p50, p95)}."""
    sql = _histograms_sql(period=period, agent=agent, per_agent_day=per_agent_day)
    params: dict[str, Any] = {
        "workspace": workspace.pk,
        "start": period.start,
        "end": period.end,
        "agent": agent.pk if agent is not None else None,
        # The months of the period, as a literal array: the planner then knows how many.
        "months": _months(period),
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {
            (grouping, agent_key, _as_date(day_key)): (percentile_of(p50), percentile_of(p95))
            for grouping, agent_key, day_key, p50, p95 in cursor.fetchall()
        }
