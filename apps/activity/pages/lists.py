"""What the console's Conversations, Users and Runs lists share (their exports and bulk actions
in apps.activity.list_actions too): a page of rows, the search box, the user box, the filters
and the score filter read from the query string, and the link into the Runs list that the
Overview, Performance and user pages lead to.

A bad filter or cursor is a message shown above the table instead of an error page.
"""

from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.urls import reverse

from apps.activity import score_filters, selectors
from apps.activity.models import EndUser
from apps.common.errors import BadRequest
from apps.common.keyset import Keyset, Page, paginate
from apps.common.sorting import ListSorts
from apps.workspaces.console import ConsoleRequest, keyset_page

PAGE_SIZE = 25


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


def _identity_filter(request: ConsoleRequest) -> tuple[str, str | None]:
    """The Users page's identity filter (`?identity=`), or "" and why when it is none."""
    identity = request.GET.get("identity", "")
    if identity and identity not in EndUser.IdentityType.values:
        return "", f"Identity must be one of {', '.join(EndUser.IdentityType.values)}."
    return identity, None


def runs_url(agent_id: str, **params: object) -> str:
    """The Runs list of `agent_id` narrowed by `params` (empty ones left out): where a chart's
    day, a model, a tool or a user of the Overview leads. `agent` keeps the Agent when the link
    is opened elsewhere (console_view switches to it)."""
    query = {"agent": agent_id, **{name: str(value) for name, value in params.items() if value}}
    return f"{reverse('activity:run_list')}?{urlencode(query)}"
