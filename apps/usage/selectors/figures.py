"""A workspace's (or one Agent's) figures over a period, from the rollup only.

One query for the daily rows, one that turns their latency histograms into percentiles in the
database (`percentiles`), one for the Agents' names, one for the limit and one for this
month's credits: the cost depends on the number of days and Agents in the period, never on the
number of runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import OuterRef, Q, Subquery, Sum
from django.utils import timezone

from apps.usage.days import month_start, next_month, utc_day
from apps.usage.models import DailyUsage
from apps.usage.rollup import COUNTER_FIELDS
from apps.usage.selectors.percentiles import _latency_percentiles
from apps.usage.selectors.scope import Period
from apps.workspaces.models import Agent, Workspace


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
