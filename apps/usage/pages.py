"""The console's Usage page: the workspace's credits per day against its monthly limit, the
per-Agent table, tokens by kind, a period picker, CSV export and the owner's limit form.

Thin: the figures come from apps.usage.selectors (the same as GET /v1/usage), the limit is
changed by apps.usage.services.
"""

import csv
from collections.abc import Iterator
from datetime import date, timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.common.errors import BadRequest, NotFound
from apps.usage import charts, selectors, services
from apps.usage.banner import banner_of
from apps.usage.forms import CreditLimitForm
from apps.usage.rendering import limit_state, percent_used
from apps.workspaces.console import ConsoleRequest, console_view
from apps.workspaces.models import Agent
from apps.workspaces.selectors import agent_list

TEMPLATE = "usage/usage.html"
PERIODS = (
    ("this_month", "This month"),
    ("last_month", "Last month"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
    ("90d", "Last 90 days"),
    ("custom", "Custom"),
)


def console_period(params, *, today: date) -> tuple[str, selectors.Period, str | None]:
    """(picker choice, period, error) from the page's query string; a bad custom range shows
    its message and falls back to this month."""
    choice = params.get("period") or "this_month"
    granularity = "week" if params.get("granularity") == "week" else "day"
    this_month = services.month_start(today)
    ranges = {
        "this_month": (this_month, services.next_month(this_month) - timedelta(days=1)),
        "last_month": (services.month_start(this_month - timedelta(days=1)), this_month - timedelta(days=1)),
        "7d": (today - timedelta(days=6), today),
        "30d": (today - timedelta(days=29), today),
        "90d": (today - timedelta(days=89), today),
    }  # fmt: skip
    if choice == "custom":
        try:
            period = selectors.period_parse(
                {
                    "from": params.get("from", "").strip(),
                    "to": params.get("to", "").strip(),
                    "granularity": granularity,
                },
                today=today,
            )
        except BadRequest as exc:
            start, end = ranges["this_month"]
            message = exc.message.replace("from:", "From:", 1).replace("to:", "To:", 1)
            return "this_month", selectors.Period(start, end, granularity), message
        return choice, period, None
    start, end = ranges.get(choice, ranges["this_month"])
    return (
        (choice if choice in ranges else "this_month"),
        selectors.Period(start, end, granularity),
        None,
    )


def _runs_url(agent_id: str, first: date, last: date) -> str:
    """The Runs list of one Agent between two days (`agent` switches the console to it)."""
    query = {"agent": agent_id, "from": first.isoformat(), "to": last.isoformat()}
    return f"{reverse('activity:run_list')}?{urlencode(query)}"


def _day_url(day: date, agent: Agent | None) -> str:
    """Where a day of the charts leads: that Agent's runs of the day, or, for the whole
    workspace, this page narrowed to the day (its Agent table then links to each one's runs)."""
    if agent is not None:
        return _runs_url(agent.pk, day, day)
    query = {"period": "custom", "from": day.isoformat(), "to": day.isoformat()}
    return f"{reverse('usage:usage_overview')}?{urlencode(query)}"


def tokens_by_kind(counters: dict) -> tuple[list[tuple[str, int]], int, list[tuple[str, int]]]:
    """(rows, total, cache rows) of the "Tokens by kind" table. The rows add up to the total,
    which is the runs' own total: input, output and, when the runs' totals hold tokens reported
    as neither (a total without its split), those as a row of their own. Cache reads and writes
    are what the provider counted in or beside the input: shown apart, never added in."""
    total = counters["total_tokens"]
    rows = [("Input", counters["input_tokens"]), ("Output", counters["output_tokens"])]
    rest = total - counters["input_tokens"] - counters["output_tokens"]
    if rest:
        rows.append(("Not split into input and output", rest))
    cache = [("Cache read", counters["cache_read_tokens"]), ("Cache write", counters["cache_write_tokens"])]  # fmt: skip
    return rows, total, cache


def _chosen_agent(request: ConsoleRequest) -> tuple[Agent | None, str | None]:
    """The Agent the page is narrowed to (`agent_id`), or None for the whole workspace; an
    unknown one shows its message and the whole workspace."""
    agent_id = request.GET.get("agent_id", "").strip()
    if not agent_id:
        return None, None
    try:
        return selectors.usage_agent_get(workspace=request.workspace, agent_id=agent_id), None
    except NotFound as exc:
        return None, f"{exc.message} Showing every Agent."


def _context(request: ConsoleRequest, *, form: CreditLimitForm | None = None) -> dict:
    today = services.utc_day(timezone.now())
    choice, period, error = console_period(request.GET, today=today)
    chosen, agent_error = _chosen_agent(request)
    usage = selectors.usage_get(workspace=request.workspace, period=period, agent=chosen)
    days = period.days
    daily_credits = [float(usage.daily[day].credits) if day in usage.daily else 0.0 for day in days]
    day_links = [_day_url(day, chosen) for day in days]
    credits_total = usage.totals.credits
    agents = [
        {
            "agent": agent,
            "figures": figures,
            "latency": figures.latency(),
            "share": float(figures.credits * 100 / credits_total) if credits_total else 0.0,
            "runs_url": _runs_url(agent.pk, period.start, period.end),
        }
        for agent, figures in usage.agents
    ]
    tokens, token_total, cache_tokens = tokens_by_kind(usage.totals.counters)
    if form is None:
        form = CreditLimitForm(initial={"monthly_credit_limit": usage.credit_limit or ""})
    return {
        "section": "usage",
        "periods": PERIODS,
        "choice": choice,
        "period": period,
        "period_error": error,
        "agent_error": agent_error,
        "usage": usage,
        "chosen_agent": chosen,
        "workspace_agents": agent_list(workspace_id=request.workspace.pk).order_by("name", "id"),
        "latency": usage.totals.latency(),
        "agents": agents,
        "tokens": tokens,
        "token_total": token_total,
        "cache_tokens": cache_tokens,
        "token_max": max([abs(value) for _, value in tokens + cache_tokens] + [1]),
        "daily_chart": charts.credits_per_day(days, daily_credits, links=day_links),
        "month_chart": charts.credits_against_limit(
            days, daily_credits, usage.credit_limit, links=day_links, today=today
        ),
        "percent_used": percent_used(usage.month_credits, usage.credit_limit),
        "limit_state": limit_state(usage.month_credits, usage.credit_limit),
        # The layout's banner, with the month's credits read fresh on this page.
        "credit_banner": banner_of(usage.month_credits, usage.credit_limit, usage.month),
        "form": form,
        "export_query": request.GET.urlencode(),
    }


@console_view
def usage_overview(request: ConsoleRequest) -> HttpResponse:
    context = _context(request)
    if request.htmx and request.htmx.target == "usage-report":
        return render(request, f"{TEMPLATE}#usage-report", context)
    return render(request, TEMPLATE, context)


@require_POST
@console_view
def usage_limit(request: ConsoleRequest) -> HttpResponse:
    if not request.is_owner:
        raise PermissionDenied("Only workspace owners can change the credit limit.")
    form = CreditLimitForm(request.POST)
    if not form.is_valid():
        return render(request, TEMPLATE, _context(request, form=form), status=400)
    limit = form.cleaned_data["monthly_credit_limit"]
    services.credit_limit_set(workspace=request.workspace, user=request.user, limit=limit)
    messages.success(
        request,
        f"Monthly credit limit set to {limit:,}." if limit else "Monthly credit limit removed.",
    )
    return redirect("usage:usage_overview")


class _Echo:
    """A file-like object whose write returns the line, for streaming csv rows."""

    def write(self, value: str) -> str:
        return value


CSV_COLUMNS = (
    "date", "agent_id", "agent_name", "runs", "completed_runs", "failed_runs", "aborted_runs",
    "streaming_runs", "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens",
    "cache_write_tokens", "credits_charged", "latency_p50_ms", "latency_p95_ms",
)  # fmt: skip


def _csv_rows(usage: selectors.Usage) -> Iterator[list]:
    yield list(CSV_COLUMNS)
    names = {agent.pk: agent.name for agent, _ in usage.agents}
    for (agent_id, day), figures in sorted(
        usage.per_agent_day.items(), key=lambda i: (i[0][1], i[0][0])
    ):
        counters = figures.counters
        p50, p95 = figures.latency()
        yield [
            day.isoformat(), agent_id, names.get(agent_id, ""),
            *(counters[name] for name in CSV_COLUMNS[3:13]),
            f"{figures.credits.normalize():f}", "" if p50 is None else p50, "" if p95 is None else p95,
        ]  # fmt: skip


@console_view
def usage_export(request: ConsoleRequest) -> StreamingHttpResponse:
    """One row per day and Agent of the chosen period, streamed."""
    _choice, period, _error = console_period(request.GET, today=services.utc_day(timezone.now()))
    chosen, _agent_error = _chosen_agent(request)
    usage = selectors.usage_get(
        workspace=request.workspace, period=period, agent=chosen, per_agent_day=True
    )
    writer = csv.writer(_Echo())
    response = StreamingHttpResponse(
        (writer.writerow(_safe_cells(row)) for row in _csv_rows(usage)),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = (
        f'attachment; filename="usage-{period.start.isoformat()}-{period.end.isoformat()}.csv"'
    )
    return response


def _safe_cells(row: list) -> list:
    """Agent names are typed by people: keep spreadsheets from reading them as formulas."""
    return [
        f"'{cell}" if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@") else cell
        for cell in row
    ]
