"""The Overview (a period's runs, tokens, credits, latency and users per day, the models, tools
and users behind them) and Performance (which tool, model, step, environment or release is
slow or failing): the charts of the console's first screen, each day and row a link into the
Runs list."""

from collections.abc import Sequence
from datetime import timedelta
from urllib.parse import urlencode

from django.http import HttpResponse
from django.utils import timezone

from apps.activity import analytics, charts, selectors
from apps.activity.overview import PERIODS, STATUS_ORDER, overview_get, overview_scope_parse
from apps.activity.overview_charts import overview_charts
from apps.activity.pages.lists import _user_filter, runs_url
from apps.common.latency import percentiles
from apps.workspaces.console import ConsoleRequest, console_view, render_page

# --- Overview ------------------------------------------------------------------------------------


@console_view
def overview(request: ConsoleRequest) -> HttpResponse:
    picked_user, params, user_error = _user_filter(request)
    scope, preset, error = overview_scope_parse(params, user_id=params.get("user_id", ""))
    data = overview_get(agent=request.agent, scope=scope)
    statuses = [status.value for status in STATUS_ORDER]
    # The preset links keep the filters; the custom range form keeps them as inputs.
    kept = {name: params[name] for name in ("model_id", "status", "user_id") if params.get(name)}
    # Every click-through keeps the Agent, the filters and the period (or narrows it to a day).
    period = {"from": scope.first_day.isoformat(), "to": scope.last_day.isoformat()}

    def runs(**narrower: object) -> str:
        return runs_url(request.agent.pk, **{**kept, **period, **narrower})

    context = {
        "section": "overview",
        "scope": scope,
        "days": scope.days,
        "preset": preset,
        "periods": [(days, urlencode({**kept, "days": days})) for days in PERIODS],
        "filtering": bool(kept),
        "picked_user": picked_user,
        "statuses": statuses,
        "model_ids": selectors.recent_run_values(agent=request.agent, field="model_id"),
        "error": error or user_error,
        "data": data,
        **overview_charts(data, runs),
        "all_runs_url": runs(),
        "models": [
            (model, count, credits, runs(model_id=model) if model else None)
            for model, count, credits in data.credits_by_model
        ],
        "top_tools": [(name, count, runs(tool_name=name)) for name, count in data.top_tools],
        "failing_tools": [
            (name, count, runs(failed_tool=name)) for name, count in data.failing_tools
        ],
        "top_users": [(row, runs(user_id=row.user_id)) for row in data.credits_by_user],
        "tool_max": max((count for _, count in data.top_tools), default=1),
        "failing_max": max((count for _, count in data.failing_tools), default=1),
        "credits_max": max((credits for _, _, credits in data.credits_by_model), default=0),
        "user_credits_max": max((row.credits for row in data.credits_by_user), default=0),
    }
    return render_page(request, "activity/overview.html", context, partial="overview-charts")


# --- Performance ---------------------------------------------------------------------------------

PERFORMANCE_GROUPS = {
    "tool": ("Tool", "tool_name"),
    "model": ("Model", "model_id"),
    "name": ("Step name", None),
    "environment": ("Environment", "environment"),
    "release": ("Release", "release"),
}
PERFORMANCE_PERIODS = (1, 7, 30, 90, 365)
PERFORMANCE_ROWS = 25


@console_view
def performance(request: ConsoleRequest) -> HttpResponse:
    """Which tool, model, step, environment or release is slow or failing: the analytics
    rollup (apps.activity.analytics) as a table with a latency chart per row, each row and
    day a link to the runs behind it."""
    group = request.GET.get("group", "tool")
    if group not in PERFORMANCE_GROUPS:
        group = "tool"
    try:
        days = int(request.GET.get("days", "7"))
    except ValueError:
        days = 7
    days = days if days in PERFORMANCE_PERIODS else 7
    last_day = timezone.now().date()
    first_day = last_day - timedelta(days=days - 1)
    rows = analytics.rollup_read(
        agent_id=request.agent.pk,
        group=group,
        first_day=first_day,
        last_day=last_day,
        by_day=True,
    )
    label, filter_name = PERFORMANCE_GROUPS[group]
    period = {"from": first_day.isoformat(), "to": last_day.isoformat()}
    day_list = [first_day + timedelta(days=n) for n in range(days)]
    table = []
    for row in rows[:PERFORMANCE_ROWS]:
        narrower = {filter_name: row.key} if filter_name and row.key else {}
        link = runs_url(request.agent.pk, **period, **narrower) if narrower else None
        p50, p95, p99 = row.latency()
        daily = [
            percentiles(row.days[day][2], (50, 95)) if day in row.days else [None, None]
            for day in day_list
        ]
        series: dict[str, Sequence[float | None]] = {
            "p50": [pair[0] for pair in daily],
            "p95": [pair[1] for pair in daily],
        }
        day_links = [
            runs_url(request.agent.pk, **narrower, **{"from": day.isoformat(),
                                                       "to": day.isoformat()})
            for day in day_list
        ]  # fmt: skip
        table.append(
            {
                "key": row.key or "(not set)",
                "link": link,
                "failed_link": (
                    runs_url(request.agent.pk, **period, failed_tool=row.key)
                    if group == "tool"
                    else f"{link}&status=failed"
                    if link
                    else None
                ),
                "count": row.count,
                "failed": row.failed,
                "error_rate": row.error_rate * 100,
                "p50": p50,
                "p95": p95,
                "p99": p99,
                "tokens": row.total_tokens,
                "chart": charts.lines(
                    day_list, series, f"{label} {row.key or '(not set)'}: latency per day",
                    unit="ms", links=day_links,
                ),
            }
        )  # fmt: skip
    context = {
        "section": "performance",
        "group": group,
        "groups": [(name, value[0]) for name, value in PERFORMANCE_GROUPS.items()],
        "group_label": label,
        "days": days,
        "periods": PERFORMANCE_PERIODS,
        "subject": "runs" if group in analytics.RUN_GROUPS else "steps",
        "rows": table,
        "more": max(0, len(rows) - PERFORMANCE_ROWS),
    }
    return render_page(request, "activity/performance.html", context)
