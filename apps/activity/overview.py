"""The console's Overview: runs, tokens, credits, latency, tools and users per day.

An Agent's activity in a date range (a preset of the last 7, 30 or 90 days, or any range of up
to 366 days), optionally narrowed by model, user and status. Its figures come from the daily
rollup the recording keeps (apps.activity.overview_rollup): O(days) rows whatever the runs.
Filtered by one end user, from that user's runs (apps.activity.overview_runs, an index range of
`run_agent_user`). Latency percentiles are read off the days' histograms by the one rule of
apps.common.latency, as the Usage page reads them.
"""

from datetime import date, timedelta

from django.utils import timezone

from apps.activity.models import RunStatus
from apps.activity.overview_rollup import overview_of_rollups
from apps.activity.overview_runs import overview_of_runs
from apps.activity.overview_types import (
    DAILY_UP_TO,
    DEFAULT_PERIOD,
    MAX_RANGE_DAYS,
    PERIODS,
    STATUS_ORDER,
    TOP_USERS,
    Overview,
    OverviewScope,
    UserSpend,
)
from apps.common.latency import merged, percentiles
from apps.workspaces.models import Agent

__all__ = [
    "PERIODS", "STATUS_ORDER", "TOP_USERS", "Overview", "OverviewScope", "UserSpend",
    "change_between", "overview_get", "overview_scope_parse",
]  # fmt: skip


def overview_scope_parse(
    params: dict[str, str], *, user_id: str = ""
) -> tuple[OverviewScope, int | None, str | None]:
    """(the scope, the preset it is or None for a custom range, a message for bad input).

    `from`/`to` (YYYY-MM-DD, both included) give a custom range of up to MAX_RANGE_DAYS; `from`
    alone runs to today, `to` alone starts DEFAULT_PERIOD days earlier. Otherwise `days` picks
    a preset. Bad input falls back to the default preset with the message, so the page still
    shows something true.
    """
    filters = {
        "model_id": params.get("model_id", "")[:200],
        "user_id": user_id,
        "status": params.get("status", "") if params.get("status") in RunStatus.values else "",
    }
    raw_from, raw_to = params.get("from", ""), params.get("to", "")
    if raw_from or raw_to:
        today = timezone.now().date()
        try:
            last = date.fromisoformat(raw_to) if raw_to else today
            first = (
                date.fromisoformat(raw_from)
                if raw_from
                else last - timedelta(days=DEFAULT_PERIOD - 1)
            )
        except ValueError:
            error = "Dates are written YYYY-MM-DD."
        else:
            if first > last:
                error = "The start of the range is after its end."
            elif (last - first).days + 1 > MAX_RANGE_DAYS:
                error = f"A range covers at most {MAX_RANGE_DAYS} days."
            else:
                return OverviewScope(first_day=first, last_day=last, **filters), None, None
        return OverviewScope.last_days(DEFAULT_PERIOD, **filters), DEFAULT_PERIOD, error
    try:
        days = int(params.get("days", DEFAULT_PERIOD))
    except ValueError:
        days = DEFAULT_PERIOD
    if days not in PERIODS:
        days = DEFAULT_PERIOD
    return OverviewScope.last_days(days, **filters), days, None


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


def overview_finish(overview: Overview) -> Overview:
    """The figures read off the others: percentiles (each day's only for a period charted by
    day), failure rate, changes."""
    wanted = (50, 95)
    per_day = [overview.histograms.get(day, {}) for day in overview.days]
    overview.p50, overview.p95 = [], []
    for histogram in per_day if len(per_day) <= DAILY_UP_TO else ():
        p50, p95 = percentiles(histogram, wanted)
        overview.p50.append(p50)
        overview.p95.append(p95)
    totals = overview.totals
    totals["p50"], totals["p95"] = percentiles(merged(per_day), wanted)
    totals["failure_rate"] = (totals["failed"] / totals["runs"] * 100) if totals["runs"] else 0.0
    overview.changes = {
        name: change_between(totals[name], overview.previous[name], rise_means=meaning)
        for name, meaning in RISE_MEANS.items()
    }
    return overview


def overview_get(
    *, agent: Agent, days: int = DEFAULT_PERIOD, scope: OverviewScope | None = None
) -> Overview:
    """The Overview of `scope`, or of the last `days` days without filters."""
    scope = scope or OverviewScope.last_days(days)
    if scope.user_id:
        return overview_finish(overview_of_runs(agent.pk, scope))
    return overview_finish(overview_of_rollups(agent.pk, scope))
