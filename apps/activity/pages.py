"""Console pages for activity: Overview, Conversations, Users and Runs.

Thin: the same selectors and filter rules as the API; HTMX requests get the table partial.
A bad filter or cursor shows its message above the table instead of an error page.
"""

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.activity import charts, selectors
from apps.activity.models import Conversation, EndUser, RunStatus
from apps.activity.overview import DEFAULT_PERIOD, PERIODS, STATUS_ORDER, overview_get
from apps.activity.transcript import message_view, safe_url
from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import PageRequest, paginate
from apps.workspaces.console import console_view

PAGE_SIZE = 25
TRANSCRIPT_LIMIT = 500


def _page(request: HttpRequest, queryset, keyset):
    """One keyset page of `queryset`, or the first page and an error for a bad cursor."""
    after = request.GET.get("after") or None
    try:
        return paginate(queryset, keyset=keyset, page=PageRequest(PAGE_SIZE, after)), None
    except BadRequest:
        page = paginate(queryset, keyset=keyset, page=PageRequest(PAGE_SIZE, None))
        return page, "That page link is no longer valid; showing the newest entries."


def _filters(request: HttpRequest, specs, *, dates: tuple[str, str] | None = None):
    """(filter values, error message) from the query string.

    The console's `from`/`to` date inputs become the list's date range; `to` includes its day.
    """
    params = {key: value.strip() for key, value in request.GET.items()}
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
    return values, None


def _render(request, template: str, partial: str, context: dict) -> HttpResponse:
    if request.htmx and request.htmx.target == partial:
        return render(request, f"{template}#{partial}", context)
    return render(request, template, context)


# --- Overview ------------------------------------------------------------------------------------


@console_view
def overview(request: HttpRequest) -> HttpResponse:
    try:
        days = int(request.GET.get("days", DEFAULT_PERIOD))
    except ValueError:
        days = DEFAULT_PERIOD
    if days not in PERIODS:
        days = DEFAULT_PERIOD
    data = overview_get(agent=request.agent, days=days)
    statuses = [status.value for status in STATUS_ORDER]
    context = {
        "section": "overview",
        "days": days,
        "periods": PERIODS,
        "data": data,
        "runs_chart": charts.stacked_bars(data.days, data.runs_by_status, "Runs per day by status"),
        "status_legend": charts.legend(statuses),
        "tokens_chart": charts.bars(data.days, data.tokens, "Tokens per day", "tokens"),
        "credits_chart": charts.bars(data.days, data.credits, "Credits per day", "credits"),
        "latency_chart": charts.lines(
            data.days, {"p50": data.p50, "p95": data.p95}, "Turn latency p50 and p95", "ms"
        ),
        "users_chart": charts.bars(data.days, data.active_users, "Active users per day", "users"),
        "tool_max": max((count for _, count in data.top_tools), default=1),
        "failing_max": max((count for _, count in data.failing_tools), default=1),
    }
    return _render(request, "activity/overview.html", "overview-charts", context)


# --- Conversations -------------------------------------------------------------------------------


@console_view
def conversation_list(request: HttpRequest) -> HttpResponse:
    filters, error = _filters(
        request, selectors.CONVERSATION_FILTERS, dates=("updated_after", "updated_before")
    )
    search = request.GET.get("q", "").strip()[:200]
    queryset = selectors.conversation_list(
        agent=request.agent, filters=filters, title_search=search
    ).select_related("user")
    page, page_error = _page(request, queryset, selectors.CONVERSATION_KEYSET)
    context = {
        "section": "conversations",
        "page": page,
        "error": error or page_error,
        "q": search,
        "statuses": RunStatus.values,
        "sources": Conversation.Source.values,
        "filtering": bool(filters or search),
        "is_first_page": not request.GET.get("after"),
    }
    return _render(request, "activity/conversation_list.html", "conversation-table", context)


@console_view
def conversation_detail(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        conversation = selectors.conversation_get(
            agent=request.agent, conversation_id=conversation_id
        )
    except NotFound:
        return render(request, "activity/not_found.html", {"what": "conversation"}, status=404)
    messages = list(
        selectors.message_list(agent=request.agent, conversation_id=conversation.pk).order_by(
            *selectors.MESSAGE_KEYSET.order_by
        )[: TRANSCRIPT_LIMIT + 1]
    )
    runs = list(
        selectors.run_list(
            agent=request.agent, filters={"conversation_id": conversation.pk}
        ).order_by("created_at", "id")[:200]
    )
    user = (
        EndUser.objects.filter(agent=request.agent, pk=conversation.user_id).first()
        if conversation.user_id
        else None
    )
    context = {
        "section": "conversations",
        "conversation": conversation,
        "end_user": user,
        "transcript": [message_view(message) for message in messages[:TRANSCRIPT_LIMIT]],
        "truncated": len(messages) > TRANSCRIPT_LIMIT,
        "runs": runs,
    }
    return render(request, "activity/conversation_detail.html", context)


# --- Users ---------------------------------------------------------------------------------------


@console_view
def user_list(request: HttpRequest) -> HttpResponse:
    filters, error = _filters(request, selectors.USER_FILTERS)
    page, page_error = _page(
        request, selectors.user_list(agent=request.agent, filters=filters), selectors.USER_KEYSET
    )
    context = {
        "section": "users",
        "page": page,
        "error": error or page_error,
        "is_first_page": not request.GET.get("after"),
    }
    return _render(request, "activity/user_list.html", "user-table", context)


@console_view
def user_detail(request: HttpRequest, user_id: str) -> HttpResponse:
    try:
        user = selectors.user_get(agent=request.agent, user_id=user_id)
    except NotFound:
        return render(request, "activity/not_found.html", {"what": "user"}, status=404)
    conversations = selectors.conversation_list(
        agent=request.agent, filters={"user_id": user.pk}
    ).order_by(*selectors.CONVERSATION_KEYSET.order_by)[:50]
    runs = selectors.run_list(agent=request.agent, filters={"user_id": user.pk}).order_by(
        *selectors.RUN_KEYSET.order_by
    )[:20]
    context = {
        "section": "users",
        "end_user": user,
        "avatar_url": safe_url(user.avatar_url),
        "conversations": conversations,
        "runs": runs,
    }
    return render(request, "activity/user_detail.html", context)


# --- Runs ----------------------------------------------------------------------------------------


@console_view
def run_list(request: HttpRequest) -> HttpResponse:
    filters, error = _filters(
        request, selectors.RUN_FILTERS, dates=("created_after", "created_before")
    )
    page, page_error = _page(
        request, selectors.run_list(agent=request.agent, filters=filters), selectors.RUN_KEYSET
    )
    context = {
        "section": "runs",
        "page": page,
        "error": error or page_error,
        "statuses": RunStatus.values,
        "filtering": bool(filters),
        "is_first_page": not request.GET.get("after"),
    }
    return _render(request, "activity/run_list.html", "run-table", context)


@console_view
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    try:
        run = selectors.run_get(agent=request.agent, run_id=run_id)
    except NotFound:
        return render(request, "activity/not_found.html", {"what": "run"}, status=404)
    conversation = Conversation.objects.filter(agent=request.agent, pk=run.conversation_id).first()
    context = {"section": "runs", "run": run, "conversation": conversation}
    return render(request, "activity/run_detail.html", context)
