"""What one does with the rows of the Conversations, Users and Runs lists besides reading them:
export every matching row (the pager's links), or act on the ticked ones (the bulk bar).

The bulk bar offers what the signed-in role may do: export the ticked rows (everyone), tag
ticked runs (everyone), score ticked runs or conversations (everyone: the scores app's page),
delete the ticked users' data on request (owners only; a confirmation page first, audited).
A refused action says why on the list it was clicked on.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.db.models import Model, QuerySet
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.activity import score_filters, selectors
from apps.activity.bulk_bar import OWNER_ACTIONS, bulk_actions
from apps.activity.erasure import end_user_data_delete
from apps.activity.models import Conversation, EndUser, Run
from apps.activity.pages.lists import (
    _filters,
    _identity_filter,
    _score_filtered,
    _search_text,
    _user_filter,
)
from apps.activity.rendering import conversation_to_dict, run_to_dict, user_to_dict
from apps.activity.tagging import runs_tag
from apps.common.errors import BadRequest, ServiceError
from apps.common.export import export_format, export_response
from apps.common.sorting import ListSorts, sorted_list
from apps.workspaces.console import (
    OWNERS_ONLY,
    ConsoleRequest,
    RowNoun,
    bulk_apply,
    bulk_confirm,
    bulk_return,
    bulk_ticked,
    console_view,
)

# --- Exports: the filtered list, every row, streamed ---------------------------------------------


@dataclass(frozen=True)
class _Export:
    list_url: str
    filters: tuple
    dates: tuple[str, str] | None
    sorts: ListSorts  # the list's orders: the export follows the one its link carries
    render: Callable[[Any], dict]
    model: type[Model]
    query: Callable[[ConsoleRequest, dict], QuerySet]
    noun: RowNoun
    # Scores are kept per run or conversation: the column naming the row in a score.
    score_column: str | None = None


_EXPORTS = {
    "conversations": _Export(
        "activity:conversation_list",
        selectors.CONVERSATION_FILTERS,
        ("updated_after", "updated_before"),
        selectors.CONVERSATION_SORTS,
        conversation_to_dict,
        Conversation,
        lambda request, filters: selectors.conversation_list(
            agent=request.agent, filters=filters, title_search=_search_text(request)
        ),
        RowNoun("conversation", "conversations"),
        "conversation_id",
    ),
    "users": _Export(
        "activity:user_list",
        selectors.USER_FILTERS,
        None,
        selectors.USER_SORTS,
        user_to_dict,
        EndUser,
        lambda request, filters: selectors.user_list(
            agent=request.agent,
            filters=filters,
            search=_search_text(request),
            identity_type=_identity_filter(request)[0],
        ),
        RowNoun("user", "users"),
    ),
    "runs": _Export(
        "activity:run_list",
        selectors.RUN_FILTERS,
        ("created_after", "created_before"),
        selectors.RUN_SORTS,
        run_to_dict,
        Run,
        lambda request, filters: selectors.run_list(agent=request.agent, filters=filters),
        RowNoun("run", "runs"),
        "run_id",
    ),
}


def _export_rows(
    request: ConsoleRequest, name: str, queryset: QuerySet, fmt: str
) -> HttpResponseBase:
    """The download of `queryset`'s rows in the order the query string asks (the list's own
    by default), each with exactly the API's fields; runs and conversations with their scores
    (a `scores` column after the API's fields)."""
    export = _EXPORTS[name]
    filename = f"{name}-{request.agent.pk}"
    column = export.score_column
    if column is None:
        ordered, keyset, _headers = sorted_list(export.sorts, queryset, request.GET)
        return export_response(
            queryset=ordered,
            keyset=keyset,
            render=export.render,
            columns=list(export.render(export.model())),
            filename=filename,
            fmt=fmt,
        )
    queryset, sorts, _chosen, score_error = _score_filtered(request, queryset, column, export.sorts)
    if score_error:
        messages.error(request, f"Nothing exported: {score_error}")
        return redirect(reverse(export.list_url))
    ordered, keyset, _headers = sorted_list(sorts, queryset, request.GET)
    return export_response(
        queryset=ordered,
        keyset=keyset,
        render=lambda row: {**export.render(row), "scores": row.export_scores},
        columns=[*export.render(export.model()), "scores"],
        filename=filename,
        fmt=fmt,
        each_batch=lambda rows: score_filters.export_scores_attach(
            rows, agent=request.agent, column=column
        ),
    )


@console_view
def list_export(request: ConsoleRequest, name: str) -> HttpResponseBase:
    """`/<list>/export/?format=csv|json&<the list's filters and order>`: what the list shows,
    all pages, in the list's order, each row with exactly the API's fields."""
    export = _EXPORTS[name]
    _user, params, user_error = _user_filter(request)
    filters, error = _filters(request, export.filters, dates=export.dates, params=params)
    error = error or user_error
    try:
        fmt = export_format(request.GET.get("format"))
    except BadRequest as exc:
        error = exc.message
    if error:
        messages.error(request, f"Nothing exported: {error}")
        query = request.GET.copy()
        query.pop("format", None)
        return redirect(f"{reverse(export.list_url)}?{query.urlencode()}")
    return _export_rows(request, name, export.query(request, filters), fmt)


# --- Bulk actions on the ticked rows ---------------------------------------------------------------

EXPORT_ACTIONS = {"export_csv": "csv", "export_json": "json"}
TAG_ACTIONS = {"tag_add": False, "tag_remove": True}  # the action: whether it removes


@require_POST
@console_view
def list_bulk(request: ConsoleRequest, name: str) -> HttpResponseBase:
    """`/<list>/bulk/`: the bulk bar's action on the ticked rows (`ids`)."""
    export = _EXPORTS[name]
    back = bulk_return(request, reverse(export.list_url))
    action = request.POST.get("action", "")
    offered = {entry[0] for entry in bulk_actions(name, is_owner=True)}
    if action not in offered or action == "score":
        messages.error(request, "Choose one of the actions above the list.")
        return redirect(back)
    if action in OWNER_ACTIONS and not request.is_owner:
        messages.error(request, OWNERS_ONLY)
        return redirect(back)
    ids = bulk_ticked(request, noun=export.noun, list_url=back)
    if isinstance(ids, HttpResponse):
        return ids
    if action in EXPORT_ACTIONS:
        rows = export.model.objects.filter(agent=request.agent, id__in=ids)  # type: ignore[attr-defined]
        return _export_rows(request, name, rows, EXPORT_ACTIONS[action])
    if action in TAG_ACTIONS:
        return _tag(request, ids, remove=TAG_ACTIONS[action], back=back)
    return _delete_data(request, ids, back=back)


def _tag(request: ConsoleRequest, ids: list[str], *, remove: bool, back: str) -> HttpResponse:
    tag = request.POST.get("tag", "")
    try:
        outcome = runs_tag(agent=request.agent, run_ids=ids, tag=tag, remove=remove)
    except ServiceError as exc:
        messages.error(request, f"Nothing tagged: {exc.message}")
        return redirect(back)
    runs = _EXPORTS["runs"].noun
    verb = f"Removed “{tag.strip()}” from" if remove else f"Tagged “{tag.strip()}”:"
    text = f"{verb} {runs(outcome.changed)}."
    if outcome.unchanged:
        already = "did not have it" if remove else "had it already"
        text += f" {runs(outcome.unchanged)} {already}."
    if outcome.full:
        text += f" {runs(outcome.full)} left as they were: at most 20 tags a run."
    messages.success(request, text)
    return redirect(back)


def _delete_data(request: ConsoleRequest, ids: list[str], *, back: str) -> HttpResponse:
    users = _EXPORTS["users"].noun
    if request.POST.get("confirm") != "1":
        found = EndUser.objects.filter(agent=request.agent, id__in=ids)
        rows = {user.id: str(user) for user in found}
        if not rows:
            messages.error(request, "None of those users exists any more.")
            return redirect(back)
        return bulk_confirm(
            request,
            section="users",
            action_url=reverse("activity:user_bulk"),
            cancel_url=back,
            action="delete_data",
            label="Delete the data of",
            noun=users,
            consequence=(
                "Their conversations with every message, their runs with every step, their "
                "feedback and the scores given to them, and the user records themselves are "
                "deleted for good. The audit log keeps that it happened, and the usage totals "
                "stay. This cannot be undone."
            ),
            rows=rows,
            danger=True,
        )
    outcome = bulk_apply(ids, lambda pk: end_user_data_delete(agent=request.agent, user_id=pk))
    messages.success(request, outcome.summary(verb="Deleted the data of", noun=users))
    return redirect(reverse("activity:user_list"))
