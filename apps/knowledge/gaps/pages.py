"""The console's Unanswered questions page (a list per status, a page per group) and its
actions. Thin: the selectors and services of apps.knowledge.gaps, shared with the API."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.common.errors import ServiceError
from apps.common.keyset import paginate
from apps.common.sorting import sorted_list
from apps.knowledge.gaps import resolution, selectors, steps
from apps.knowledge.gaps.models import KnowledgeGap
from apps.knowledge.relevance import DEFAULT_MIN_SCORE
from apps.workspaces.console import (
    ConsoleRequest,
    bounded_count,
    console_view,
    keyset_page,
    render_page,
)

LIST_TEMPLATE = "knowledge/gap_list.html"
DETAIL_TEMPLATE = "knowledge/gap_detail.html"
PAGE_SIZE = 25


@require_GET
@console_view
def gap_list(request: ConsoleRequest) -> HttpResponse:
    status = request.GET.get("status") or KnowledgeGap.Status.OPEN
    if status not in selectors.STATUSES:
        status = KnowledgeGap.Status.OPEN
    queryset = selectors.gap_queryset(agent=request.agent, filters=selectors.GapFilters(status))
    ordered, keyset, sort_columns = sorted_list(selectors.GAP_SORTS, queryset, request.GET)
    page, stale = keyset_page(
        request, lambda page: paginate(ordered, keyset=keyset, page=page), limit=PAGE_SIZE
    )
    selectors.gap_examples_attach(page.rows)
    context = {
        "section": "gaps",
        "status": status,
        "statuses": KnowledgeGap.Status.choices,
        "gaps": page.rows,
        "count": bounded_count(queryset),
        "sort_columns": sort_columns,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "list_error": stale,
        "min_score": DEFAULT_MIN_SCORE,
        "low_score": steps.LOW_SCORE,
    }
    return render_page(request, LIST_TEMPLATE, context, partial="gap-table")


@require_GET
@console_view
def gap_detail(request: ConsoleRequest, gap_id: str) -> HttpResponse:
    gap = selectors.gap_get(agent=request.agent, gap_id=gap_id)
    return render(
        request,
        DETAIL_TEMPLATE,
        {
            "section": "gaps",
            "gap": gap,
            "questions": selectors.gap_questions(gap=gap),
            "askings": selectors.gap_askings(gap=gap),
        },
    )


def _back(request: ConsoleRequest, gap_id: str) -> HttpResponse:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("knowledge:gap_detail", args=[gap_id])
    return redirect(target or reverse("knowledge:gap_detail", args=[gap_id]))


@require_POST
@console_view
def gap_resolve(request: ConsoleRequest, gap_id: str) -> HttpResponse:
    try:
        gap = resolution.gap_resolve(agent=request.agent, gap_id=gap_id)
    except ServiceError as exc:
        if exc.status == 404:
            raise
        messages.error(request, exc.message)
    else:
        messages.success(
            request, f"Resolved “{gap.representative[:80]}”. It opens again if asked again."
        )
    return _back(request, gap_id)


@require_POST
@console_view
def gap_reopen(request: ConsoleRequest, gap_id: str) -> HttpResponse:
    try:
        gap = resolution.gap_reopen(agent=request.agent, gap_id=gap_id)
    except ServiceError as exc:
        if exc.status == 404:
            raise
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Opened “{gap.representative[:80]}” again.")
    return _back(request, gap_id)
