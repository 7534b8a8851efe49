"""Console pages for activity: Overview, Conversations, Users and Runs.

Thin: the same selectors and filter rules as the API; HTMX requests get the table partial.
A bad filter or cursor shows its message above the table instead of an error page.
"""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from apps.activity import analytics, charts, score_filters, selectors
from apps.activity.bulk_bar import bulk_actions
from apps.activity.models import Conversation, EndUser, RunStatus
from apps.activity.overview import PERIODS, STATUS_ORDER, overview_get, overview_scope_parse
from apps.activity.overview_charts import overview_charts
from apps.activity.search_pages import word_matches
from apps.activity.step_messages import step_messages
from apps.activity.trace import documents_view, json_tree, rows_html, waterfall
from apps.activity.transcript import initials_of, message_view, runs_by_turn, safe_url, turn_usage
from apps.common.errors import BadRequest
from apps.common.keyset import Keyset, Page, paginate
from apps.common.latency import percentiles
from apps.common.sorting import ListSorts, sorted_list
from apps.knowledge import events as knowledge_events
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    keyset_page,
    remote_images_allowed,
    render_page,
)

PAGE_SIZE = 25
TRANSCRIPT_LIMIT = 500
CONVERSATION_RUNS_LIMIT = 200
USER_CONVERSATIONS_LIMIT = 50
USER_RUNS_LIMIT = 20
# A user's page shows their usage of all time and of the last USER_RECENT_DAYS days.
USER_RECENT_DAYS = 30
# Steps drawn on a run's page; a longer trace says so and links to the API's full list.
TRACE_LIMIT = 2000


def _page(request: ConsoleRequest, queryset: QuerySet, keyset: Keyset) -> tuple[Page, str | None]:
    return keyset_page(
        request, lambda page: paginate(queryset, keyset=keyset, page=page), limit=PAGE_SIZE
    )


def _search_text(request: ConsoleRequest) -> str:
    return request.GET.get("q", "").strip()[:200]


def _user_filter(request: ConsoleRequest) -> tuple[EndUser | None, dict, str | None]:
    """The user the filter box names (an id, or a name, email or external id that matches one
    user), the query parameters to filter with, and a message when it names none or several."""
    params = {key: str(value).strip() for key, value in request.GET.items()}
    text = params.get("user_id", "")
    if not text:
        return None, params, None
    user, candidates = selectors.user_pick(agent=request.agent, text=text[:200])
    if user is not None:
        params["user_id"] = user.id
        return user, params, None
    del params["user_id"]
    if not candidates:
        return None, params, f"No user matches “{text}”."
    return None, params, f"Several users match “{text}”; pick one from the suggestions."


def _filters(
    request: ConsoleRequest,
    specs,
    *,
    dates: tuple[str, str] | None = None,
    params: dict | None = None,
):
    """(filter values, error message) from the query string (or `params` made from it).

    The console's `from`/`to` date inputs become the list's date range; `to` includes its day.
    """
    if params is None:
        params = {key: str(value).strip() for key, value in request.GET.items()}
    params = dict(params)
    renames = {}
    if dates:
        after_name, before_name = dates
        params[after_name] = params.get("from", "")
        params[before_name] = params.get("to", "")
        renames = {after_name: "From", before_name: "To"}
    try:
        values = selectors.filters_parse(params, specs)
    except BadRequest as exc:
        message = exc.message
        for name, label in renames.items():
            message = message.replace(name, label)
        return {}, message
    if dates and before_name in values and len(params[before_name]) == 10:
        values[before_name] += timedelta(days=1)
    inverted = (
        dates
        and after_name in values
        and before_name in values
        and values[after_name] >= values[before_name]
    )
    if inverted:  # it matched nothing, silently; say so instead
        return {}, "From is after To: no row can match. Swap the dates or clear one."
    return values, None


def _dimension_choices(request: ConsoleRequest) -> dict:
    """Suggestions for the environment and release filters, from the newest runs."""
    return {
        "environments": selectors.recent_run_values(agent=request.agent, field="environment"),
        "releases": selectors.recent_run_values(agent=request.agent, field="release"),
    }


def _score_filtered(request: ConsoleRequest, queryset: QuerySet, column: str, sorts: ListSorts):
    """The list narrowed by its score filter (apps.activity.score_filters), the list's orders
    with "by this score" added when a score is chosen, the filter, and its error if any."""
    try:
        chosen = score_filters.score_filter_parse(request.GET)
    except BadRequest as exc:
        return queryset, sorts, score_filters.ScoreFilter(), exc.message
    queryset = score_filters.score_filter_apply(
        queryset, agent=request.agent, chosen=chosen, column=column
    )
    sorts = score_filters.sorts_with_score(sorts, agent=request.agent, chosen=chosen, column=column)
    return queryset, sorts, chosen, None


def _score_names(request: ConsoleRequest) -> list[str]:
    return score_filters.score_names(agent=request.agent)


# --- Overview ------------------------------------------------------------------------------------


def runs_url(agent_id: str, **params: object) -> str:
    """The Runs list of `agent_id` narrowed by `params` (empty ones left out): where a chart's
    day, a model, a tool or a user of the Overview leads. `agent` keeps the Agent when the link
    is opened elsewhere (console_view switches to it)."""
    query = {"agent": agent_id, **{name: str(value) for name, value in params.items() if value}}
    return f"{reverse('activity:run_list')}?{urlencode(query)}"


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


# --- Conversations -------------------------------------------------------------------------------


@console_view
def conversation_list(request: ConsoleRequest) -> HttpResponse:
    picked_user, params, user_error = _user_filter(request)
    filters, error = _filters(
        request,
        selectors.CONVERSATION_FILTERS,
        dates=("updated_after", "updated_before"),
        params=params,
    )
    error = error or user_error
    search = _search_text(request)
    words = word_matches(request, search, subject="conversations")
    queryset = selectors.conversation_list(
        agent=request.agent, filters=filters, title_search=search, or_ids=words.ids
    ).select_related("user")
    words.keep_within(queryset)
    queryset, conversation_sorts, scored, score_error = _score_filtered(
        request, queryset, "conversation_id", selectors.CONVERSATION_SORTS
    )
    error = error or score_error
    ordered, keyset, sort_columns = sorted_list(conversation_sorts, queryset, request.GET)
    page, page_error = _page(request, ordered, keyset)
    score_filters.score_summaries_attach(page.rows, agent=request.agent, column="conversation_id")
    count = bounded_count(queryset)
    totals = selectors.conversation_totals(
        agent=request.agent, conversation_ids=[row.id for row in page.rows]
    )
    for row in page.rows:
        row.totals = totals[row.id]
    context = {
        "section": "conversations",
        "sort_columns": sort_columns,
        "bulk_actions": bulk_actions("conversations", is_owner=request.is_owner),
        "picked_user": picked_user,
        "page": page,
        "count": count,
        "error": error or page_error,
        "q": search,
        "words": words,
        "statuses": RunStatus.values,
        "sources": Conversation.Source.values,
        **_dimension_choices(request),
        "score_filter": scored,
        "score_names": _score_names(request),
        "filtering": bool(filters or search or scored),
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
    }
    return render_page(
        request, "activity/conversation_list.html", context, partial="conversation-table"
    )


@console_view
def conversation_detail(request: ConsoleRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(agent=request.agent, conversation_id=conversation_id)
    messages = selectors.transcript_messages(
        agent=request.agent, conversation_id=conversation.id, limit=TRANSCRIPT_LIMIT
    )
    shown = messages[:TRANSCRIPT_LIMIT]
    runs = selectors.conversation_runs(
        agent=request.agent, conversation_id=conversation.id, limit=CONVERSATION_RUNS_LIMIT
    )
    turns = runs_by_turn(shown, runs)
    transcript = []
    for message in shown:
        item = message_view(message)
        if message.id in turns:
            item["turn"] = turn_usage(turns[message.id])
        transcript.append(item)
    _link_sources_to_documents(request, transcript)
    context = {
        "section": "conversations",
        "conversation": conversation,
        "end_user": selectors.end_user_find(agent=request.agent, user_id=conversation.user_id),
        "transcript": transcript,
        "truncated": len(messages) > TRANSCRIPT_LIMIT,
        "remote_images": remote_images_allowed(request),
        "runs": runs,
    }
    return render(request, "activity/conversation_detail.html", context)


def _link_sources_to_documents(request: ConsoleRequest, transcript: list[dict]) -> None:
    """AI SDK source parts whose `sourceId` is one of the Agent's documents link to its page."""
    sources = [part for item in transcript for part in item["parts"] if part["kind"] == "source"]
    ids = {part["source_id"] for part in sources if part["source_id"]}
    known = knowledge_events.known_document_ids(agent=request.agent, ids=ids)
    for part in sources:
        if part["source_id"] in known:
            part["document_id"] = part["source_id"]


# --- Users ---------------------------------------------------------------------------------------


def _identity_filter(request: ConsoleRequest) -> tuple[str, str | None]:
    """The Users page's identity filter (`?identity=`), or "" and why when it is none."""
    identity = request.GET.get("identity", "")
    if identity and identity not in EndUser.IdentityType.values:
        return "", f"Identity must be one of {', '.join(EndUser.IdentityType.values)}."
    return identity, None


@console_view
def user_list(request: ConsoleRequest) -> HttpResponse:
    filters, error = _filters(request, selectors.USER_FILTERS)
    search = _search_text(request)
    identity, identity_error = _identity_filter(request)
    error = error or identity_error
    users = selectors.user_list(
        agent=request.agent, filters=filters, search=search, identity_type=identity
    )
    ordered, keyset, sort_columns = sorted_list(selectors.USER_SORTS, users, request.GET)
    page, page_error = _page(request, ordered, keyset)
    usage = selectors.user_usage(agent=request.agent, user_ids=[row.id for row in page.rows])
    for row in page.rows:
        row.usage = usage[row.id]
    context = {
        "section": "users",
        "sort_columns": sort_columns,
        "bulk_actions": bulk_actions("users", is_owner=request.is_owner),
        "identity": identity,
        "identities": EndUser.IdentityType.choices,
        "count": bounded_count(users),
        "filtering": bool(filters or search or identity),
        "q": search,
        "page": page,
        "error": error or page_error,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
    }
    return render_page(request, "activity/user_list.html", context, partial="user-table")


@console_view
def user_detail(request: ConsoleRequest, user_id: str) -> HttpResponse:
    user = selectors.user_get(agent=request.agent, user_id=user_id)
    today = timezone.now().date()
    recent_from = today - timedelta(days=USER_RECENT_DAYS - 1)
    recent_since = datetime(recent_from.year, recent_from.month, recent_from.day, tzinfo=UTC)
    overview_query = urlencode({"user_id": user.id, "days": USER_RECENT_DAYS})
    context = {
        "section": "users",
        "end_user": user,
        "avatar_url": safe_url(user.avatar_url),
        "initials": initials_of(user.display_name or user.email or user.external_id or ""),
        "remote_images": remote_images_allowed(request),
        "conversations": selectors.user_recent_conversations(
            agent=request.agent, user_id=user.id, limit=USER_CONVERSATIONS_LIMIT
        ),
        "runs": selectors.user_recent_runs(
            agent=request.agent, user_id=user.id, limit=USER_RUNS_LIMIT
        ),
        "usage_all": selectors.user_usage(agent=request.agent, user_ids=[user.id])[user.id],
        "usage_recent": selectors.user_usage(
            agent=request.agent, user_ids=[user.id], since=recent_since
        )[user.id],
        "recent_days": USER_RECENT_DAYS,
        "overview_url": f"{reverse('activity:overview')}?{overview_query}",
        "recent_runs_url": runs_url(
            request.agent.pk, user_id=user.id, **{"from": recent_from.isoformat()}
        ),
        "all_runs_url": runs_url(request.agent.pk, user_id=user.id),
    }
    return render(request, "activity/user_detail.html", context)


# --- Runs ----------------------------------------------------------------------------------------


@console_view
def run_list(request: ConsoleRequest) -> HttpResponse:
    picked_user, params, user_error = _user_filter(request)
    filters, error = _filters(
        request, selectors.RUN_FILTERS, dates=("created_after", "created_before"), params=params
    )
    error = error or user_error
    search = _search_text(request)
    words = word_matches(request, search, subject="runs")
    runs = selectors.run_list(agent=request.agent, filters=filters)
    if search:
        runs = runs.filter(id__in=words.ids)
    words.keep_within(runs)
    runs, run_sorts, scored, score_error = _score_filtered(
        request, runs, "run_id", selectors.RUN_SORTS
    )
    error = error or score_error
    sorted_runs, keyset, sort_columns = sorted_list(
        run_sorts, runs.select_related("user"), request.GET
    )
    page, page_error = _page(request, sorted_runs, keyset)
    score_filters.score_summaries_attach(page.rows, agent=request.agent, column="run_id")
    context = {
        "section": "runs",
        "bulk_actions": bulk_actions("runs", is_owner=request.is_owner),
        "score_filter": scored,
        "score_names": _score_names(request),
        "sort_columns": sort_columns,
        "picked_user": picked_user,
        "count": bounded_count(runs),
        "page": page,
        "model_ids": selectors.recent_run_values(agent=request.agent, field="model_id"),
        "error_codes": selectors.recent_run_values(agent=request.agent, field="error_code"),
        **_dimension_choices(request),
        "error": error or page_error,
        "statuses": RunStatus.values,
        "q": search,
        "words": words,
        "filtering": bool(filters or scored or search),
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
    }
    return render_page(request, "activity/run_list.html", context, partial="run-table")


@require_GET
@console_view
def user_suggest(request: ConsoleRequest) -> HttpResponse:
    """Suggestions for the user filter box: a datalist of ids labelled with names. Opened as
    a page (an address copied or reloaded), it is the Users list searched for the text."""
    text = request.GET.get("user_id", "").strip()[:200]
    if not request.htmx:
        return redirect(f"{reverse('activity:user_list')}?{urlencode({'q': text})}")
    _user, candidates = selectors.user_pick(agent=request.agent, text=text) if text else (None, [])
    return render(request, "activity/_user_choices.html", {"candidates": candidates})


@console_view
def run_detail(request: ConsoleRequest, run_id: str) -> HttpResponse:
    run = selectors.run_get(agent=request.agent, run_id=run_id)
    conversation = selectors.conversation_find(
        agent=request.agent, conversation_id=run.conversation_id
    )
    steps = selectors.run_trace(agent=request.agent, run_id=run.id, limit=TRACE_LIMIT)
    run_end = run.completed_at
    if run_end is None and run.total_turn_latency_ms is not None:
        run_end = run.created_at + timedelta(milliseconds=run.total_turn_latency_ms)
    trace = waterfall(steps, limit=TRACE_LIMIT, run_start=run.created_at, run_end=run_end)
    step_url = reverse("activity:step_detail", args=[run.id, "__step__"])
    context = {
        "section": "runs",
        "run": run,
        "conversation": conversation,
        "trace": trace,
        "trace_rows": rows_html(trace.rows, step_url=step_url),
        "late_rows": rows_html(trace.late_rows, step_url=step_url),
        "produced": selectors.run_messages(agent=request.agent, run_id=run.id),
    }
    return render(request, "activity/run_detail.html", context)


@console_view
def step_detail(request: ConsoleRequest, run_id: str, step_id: str) -> HttpResponse:
    """One step's input, output, error, attributes and documents: the waterfall row's body,
    fetched when the row is opened (a full page without HTMX)."""
    run = selectors.run_get(agent=request.agent, run_id=run_id)
    step = selectors.step_get(agent=request.agent, run_id=run.id, step_id=step_id)
    context = {
        "section": "runs",
        "run": run,
        "step": step,
        "input_tree": json_tree(step.input) if step.input is not None else None,
        "output_tree": json_tree(step.output) if step.output is not None else None,
        "input_messages": step_messages(step.input),
        "output_messages": step_messages(step.output),
        "attributes_tree": json_tree(step.attributes) if step.attributes else None,
        "documents": documents_view(step.documents),
    }
    template = "activity/_step_body.html" if request.htmx else "activity/step_detail.html"
    return render(request, template, context)
