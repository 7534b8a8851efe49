"""Reads of usage: a workspace's (or one Agent's) figures over a period, from the rollup only.

One query for the daily rows, one that turns their latency histograms into percentiles in the
database, one for the Agents' names, one for the limit and one for this month's credits: the
cost depends on the number of days and Agents in the period, never on the number of runs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import OuterRef, Q, Subquery, Sum
from django.utils import timezone

from apps.common.errors import BadRequest, NotFound
from apps.usage.days import month_start, next_month, utc_day
from apps.usage.latency import bucket_value
from apps.usage.models import DailyUsage
from apps.usage.rollup import COUNTER_FIELDS
from apps.workspaces.models import Agent, Workspace

GRANULARITIES = ("day", "week")
MAX_PERIOD_DAYS = 366
EARLIEST_DAY = date(1970, 1, 1)
LATEST_DAY = date(9998, 12, 31)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Period:
    start: date  # first day, included
    end: date  # last day, included
    granularity: str = "day"

    @property
    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days + 1)]

    def buckets(self) -> list[tuple[date, date]]:
        """(first, last) day of each series entry: days, or ISO weeks (Monday to Sunday) cut
        to the period."""
        if self.granularity == "day":
            return [(day, day) for day in self.days]
        result = []
        first = self.start
        while first <= self.end:
            last = min(first + timedelta(days=6 - first.weekday()), self.end)
            result.append((first, last))
            first = last + timedelta(days=1)
        return result


def _day(name: str, raw: str) -> date:
    if not _DAY.fullmatch(raw):
        raise BadRequest(f"{name}: Must be a date written YYYY-MM-DD; got {raw[:40]!r}.")
    try:
        value = date.fromisoformat(raw)
    except ValueError:
        raise BadRequest(f"{name}: {raw!r} is not a calendar date.") from None
    if not EARLIEST_DAY <= value <= LATEST_DAY:
        raise BadRequest(f"{name}: Must be between 1970-01-01 and 9998-12-31.")
    return value


def period_parse(params: Mapping[str, str], *, today: date | None = None) -> Period:
    """The period of `from`/`to` (UTC dates, both included) and `granularity`.

    Neither date: the current month up to today. Only `from`: up to today. Only `to`: from the
    first day of its month. At most 366 days.
    """
    today = today or utc_day(timezone.now())
    raw_from, raw_to = params.get("from") or None, params.get("to") or None
    end = _day("to", raw_to) if raw_to else today
    start = _day("from", raw_from) if raw_from else month_start(end)
    if start > end:
        raise BadRequest(f"from: {start} is after to ({end}); from must not be after to.")
    if (end - start).days + 1 > MAX_PERIOD_DAYS:
        raise BadRequest(f"to: A period covers at most {MAX_PERIOD_DAYS} days.")
    granularity = params.get("granularity") or "day"
    if granularity not in GRANULARITIES:
        raise BadRequest(f"granularity: Must be one of day, week; got {granularity[:40]!r}.")
    return Period(start=start, end=end, granularity=granularity)


def usage_agent_get(*, workspace: Workspace, agent_id: str) -> Agent:
    """An Agent of the workspace (active or archived: archived Agents' usage still counts)."""
    agent = None
    if agent_id and len(agent_id) <= 64 and "\x00" not in agent_id:
        agent = Agent.objects.filter(workspace=workspace, pk=agent_id).first()
    if agent is None:
        raise NotFound(f"No Agent {agent_id[:64]!r} in this workspace.")
    return agent


@dataclass
class Figures:
    """Sums over some runs, and their turn latency p50/p95 (None without latencies)."""

    counters: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(COUNTER_FIELDS, 0))
    p50: float | None = None
    p95: float | None = None

    def add_counters(self, values: Mapping[str, Any]) -> None:
        for name in COUNTER_FIELDS:
            self.counters[name] += values[name]

    @property
    def credits(self) -> Decimal:
        return Decimal(self.counters["credits_charged"])

    def latency(self) -> tuple[float | None, float | None]:
        return self.p50, self.p95


@dataclass
class Usage:
    workspace: Workspace
    agent: Agent | None
    period: Period
    totals: Figures
    agents: list[tuple[Agent, Figures]]
    series: list[tuple[date, date, Figures]]
    month: date
    month_credits: Decimal
    credit_limit: Decimal | None
    # Per day of the period (the console's chart) and per Agent and day (the CSV export).
    daily: dict[date, Figures]
    per_agent_day: dict[tuple[str, date], Figures]


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


def _counter_sums(scope: Q, *keys: str) -> list[dict[str, Any]]:
    """The daily rows' counters summed per `keys` ("agent_id", "day" or both: an Agent-day's
    stripes summed)."""
    rows = (
        DailyUsage.objects.filter(scope)
        .values(*keys)
        .annotate(**{f"sum_{name}": Sum(name) for name in COUNTER_FIELDS})
    )
    return [
        {**{key: row[key] for key in keys}, **{name: row[f"sum_{name}"] for name in COUNTER_FIELDS}}
        for row in rows
    ]


def usage_get(
    *,
    workspace: Workspace,
    period: Period,
    agent: Agent | None = None,
    per_agent_day: bool = False,
) -> Usage:
    """The figures of `workspace` (or only `agent`) over `period`; `per_agent_day` also gives
    each Agent's latency per day (the CSV export)."""
    scope = Q(workspace=workspace, day__gte=period.start, day__lte=period.end)
    if agent is not None:
        scope &= Q(agent=agent)
    sums = _sums(scope, per_agent_day=per_agent_day)
    latency = _latency_percentiles(
        workspace=workspace, period=period, agent=agent, per_agent_day=per_agent_day
    )
    sums.totals.p50, sums.totals.p95 = latency.get(("total", "", None), (None, None))
    for agent_id, figures in sums.by_agent.items():
        figures.p50, figures.p95 = latency.get(("agent", agent_id, None), (None, None))
    for (agent_id, day), figures in sums.by_agent_day.items():
        figures.p50, figures.p95 = latency.get(("agent_day", agent_id, day), (None, None))
    series = _series(period, sums.by_day, latency)
    agents = _agents_figures(workspace, agent, sums.by_agent)
    month = month_start(utc_day(timezone.now()))
    credit_limit, month_credits = _limit_and_month_credits(workspace, month)
    return Usage(
        workspace=workspace,
        agent=agent,
        period=period,
        totals=sums.totals,
        agents=agents,
        series=series,
        month=month,
        month_credits=month_credits,
        credit_limit=credit_limit,
        daily=dict(sums.by_day),
        per_agent_day=sums.by_agent_day,
    )


@dataclass
class _Sums:
    totals: Figures = field(default_factory=Figures)
    by_agent: dict[str, Figures] = field(default_factory=lambda: defaultdict(Figures))
    by_day: dict[date, Figures] = field(default_factory=lambda: defaultdict(Figures))
    by_agent_day: dict[tuple[str, date], Figures] = field(default_factory=dict)


def _sums(scope: Q, *, per_agent_day: bool) -> _Sums:
    """The counters in `scope` in total, per Agent, per day, and per Agent-day if asked."""
    sums = _Sums()
    if per_agent_day:
        for row in _counter_sums(scope, "agent_id", "day"):
            figures = Figures()
            figures.add_counters(row)
            sums.by_agent_day[(row["agent_id"], row["day"])] = figures
            for target in (sums.totals, sums.by_agent[row["agent_id"]], sums.by_day[row["day"]]):
                target.add_counters(row)
    else:
        # Summed in the database: a year of 5 Agents is 1,830 rows, of which 371 sums travel.
        for row in _counter_sums(scope, "agent_id"):
            sums.by_agent[row["agent_id"]].add_counters(row)
        for row in _counter_sums(scope, "day"):
            sums.by_day[row["day"]].add_counters(row)
        for figures in sums.by_agent.values():
            sums.totals.add_counters(figures.counters)
    return sums


def _series(
    period: Period, by_day: Mapping[date, Figures], latency: Mapping[tuple, tuple]
) -> list[tuple[date, date, Figures]]:
    """(first day, last day, figures) of each day or week of the period."""
    series = []
    for first, last in period.buckets():
        entry = Figures()
        day = first
        while day <= last:
            if day in by_day:
                entry.add_counters(by_day[day].counters)
            day += timedelta(days=1)
        # A week's key is its Monday, which may fall before the period's first day.
        key = first if period.granularity == "day" else first - timedelta(days=first.weekday())
        entry.p50, entry.p95 = latency.get(("series", "", key), (None, None))
        series.append((first, last, entry))
    return series


def _agents_figures(
    workspace: Workspace, agent: Agent | None, by_agent: Mapping[str, Figures]
) -> list[tuple[Agent, Figures]]:
    """`agent` alone, or every active Agent (zeros included) and the archived ones that used
    something, most credits first."""
    if agent is not None:
        return [(agent, by_agent.get(agent.pk) or Figures())]
    candidates = Agent.objects.filter(workspace=workspace).filter(
        Q(status=Agent.Status.ACTIVE) | Q(pk__in=list(by_agent))
    )
    agents = [(candidate, by_agent.get(candidate.pk) or Figures()) for candidate in candidates]
    agents.sort(key=lambda pair: (-pair[1].credits, -pair[1].counters["runs"], pair[0].pk))
    return agents


def _limit_and_month_credits(workspace: Workspace, month: date) -> tuple[Decimal | None, Decimal]:
    """One query for the limit (read fresh: the API key's cached copy of the workspace may
    predate a change) and this month's credits."""
    this_month = (
        DailyUsage.objects.filter(
            workspace=OuterRef("pk"), day__gte=month, day__lt=next_month(month)
        )
        .values("workspace")
        .annotate(total=Sum("credits_charged"))
        .values("total")
    )
    credit_limit, month_credits = (
        Workspace.objects.filter(pk=workspace.pk)
        .annotate(month_credits=Subquery(this_month))
        .values_list("monthly_credit_limit", "month_credits")
        .get()
    )
    return credit_limit, month_credits or Decimal(0)
