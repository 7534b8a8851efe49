"""The Users list, one user's page (their usage of all time and of recent days, their latest
conversations and runs) and the suggestions of the user filter box."""

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from apps.activity import selectors
from apps.activity.bulk_bar import bulk_actions
from apps.activity.models import EndUser
from apps.activity.pages.lists import _filters, _identity_filter, _page, _search_text, runs_url
from apps.activity.transcript import initials_of, safe_url
from apps.common.sorting import sorted_list
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    remote_images_allowed,
    render_page,
)

USER_CONVERSATIONS_LIMIT = 50
USER_RUNS_LIMIT = 20
# A user's page shows their usage of all time and of the last USER_RECENT_DAYS days.
USER_RECENT_DAYS = 30


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
