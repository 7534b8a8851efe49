"""The Runs list, one run's page (its trace drawn as a waterfall, the messages it produced) and
one step's body, fetched when its waterfall row is opened."""

from datetime import timedelta

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from apps.activity import score_filters, selectors
from apps.activity.bulk_bar import bulk_actions
from apps.activity.models import RunStatus
from apps.activity.pages.lists import (
    _dimension_choices,
    _filters,
    _page,
    _score_filtered,
    _score_names,
    _search_text,
    _user_filter,
)
from apps.activity.search_pages import word_matches
from apps.activity.step_messages import step_messages
from apps.activity.trace import documents_view, json_tree, rows_html, waterfall
from apps.common.sorting import sorted_list
from apps.workspaces.console import ConsoleRequest, bounded_count, console_view, render_page

# Steps drawn on a run's page; a longer trace says so and links to the API's full list.
TRACE_LIMIT = 2000


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
