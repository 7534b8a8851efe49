"""Console pages of knowledge: the document list (its table, upload, add URL, the retrieval test
over every document, bulk actions). A document's row and its page are in document_pages.py.
Thin: every rule lives in services and selectors, shared with the API."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from apps.common.errors import BadRequest, ServiceError
from apps.common.keyset import paginate
from apps.common.sorting import sorted_list
from apps.knowledge import search, selectors, services
from apps.knowledge.gaps import selectors as gap_selectors
from apps.knowledge.models import REFRESH_INTERVALS, KnowledgeDocument
from apps.knowledge.relevance import DEFAULT_MIN_SCORE
from apps.knowledge.uploads import limit_uploads
from apps.workspaces.console import (
    ConsoleRequest,
    RowNoun,
    bounded_count,
    bulk_apply,
    bulk_confirm,
    bulk_ticked,
    console_view,
    keyset_page,
    render_page,
)

LIST_TEMPLATE = "knowledge/document_list.html"


PAGE_SIZE = 25
SEARCH_LIMIT = 10


def _interval_choices() -> list[tuple[int, str]]:
    labels = {0: "Never", 6: "Every 6 hours", 12: "Every 12 hours", 24: "Daily", 168: "Weekly"}
    return [(hours, labels[hours]) for hours in REFRESH_INTERVALS]


def _table_context(request: ConsoleRequest) -> dict:
    filters = {
        "status": request.GET.get("status") or None,
        "source_type": request.GET.get("source") or None,
        "kind": request.GET.get("kind") or None,
    }
    filter_error = None
    try:  # an edited filter: every document, and why
        queryset = selectors.document_queryset(agent=request.agent, **filters)
    except BadRequest as exc:
        filters, filter_error = {}, exc.message
        queryset = selectors.document_queryset(agent=request.agent)
    # Retrieved by the Agent's runs in the last 30 days, or never (apps.knowledge.gaps).
    retrieval = request.GET.get("retrieved") or ""
    if retrieval in ("yes", "no"):
        queryset = gap_selectors.documents_by_retrieval(
            queryset, agent=request.agent, retrieved=retrieval == "yes"
        )
    else:
        retrieval = ""
    ordered, keyset, sort_columns = sorted_list(selectors.DOCUMENT_SORTS, queryset, request.GET)
    page, stale = keyset_page(
        request, lambda page: paginate(ordered, keyset=keyset, page=page), limit=PAGE_SIZE
    )
    retrieved = gap_selectors.document_retrieval_counts(
        agent=request.agent, document_ids=[document.pk for document in page.rows]
    )
    for document in page.rows:
        document.retrieved_runs = retrieved.get(document.pk, 0)  # type: ignore[attr-defined]
    return {
        "sort_columns": sort_columns,
        "filters": {key: value or "" for key, value in filters.items()},
        "filtering": any(filters.values()) or bool(retrieval),
        "retrieval": retrieval,
        "count": bounded_count(queryset),
        "list_error": filter_error or stale,
        "statuses": KnowledgeDocument.Status.choices,
        "sources": KnowledgeDocument.SourceType.choices,
        "kinds": selectors.document_kinds(agent=request.agent),
        "documents": page.rows,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
        "interval_choices": _interval_choices(),
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "bulk_actions": [(value, spec[0], spec[3]) for value, spec in BULK_ACTIONS.items()],
    }


@require_GET
@console_view
def document_list(request: ConsoleRequest) -> HttpResponse:
    context = _table_context(request)
    context.update(
        section="knowledge",
        max_upload_mb=services.max_upload_bytes() // 2**20,
        min_score=DEFAULT_MIN_SCORE,
        default_min_score=DEFAULT_MIN_SCORE,
    )
    return render_page(request, LIST_TEMPLATE, context, partial="document-table")


@csrf_exempt
@require_POST
def document_upload(request: HttpRequest) -> HttpResponse:
    """One file per request (the page sends each with XMLHttpRequest to show progress).

    CSRF is checked by the inner view, after the size-limited upload handler is installed:
    the middleware would otherwise parse the whole body with the default handlers first.
    """
    limit_uploads(request)
    try:
        return _document_upload(request)
    except ServiceError as exc:  # raised by the upload handler while the body streams in
        return JsonResponse({"name": exc.name, "message": exc.message}, status=exc.status)


@csrf_protect
@console_view
def _document_upload(request: ConsoleRequest) -> HttpResponse:
    try:
        upload = request.FILES.get("file")
        if upload is None:
            raise BadRequest("Choose a file to upload.")
        document = services.document_create_from_upload(agent=request.agent, upload=upload)
    except ServiceError as exc:
        return JsonResponse({"name": exc.name, "message": exc.message}, status=exc.status)
    return JsonResponse({"id": document.pk, "name": document.name}, status=201)


@require_POST
@console_view
def document_add_url(request: ConsoleRequest) -> HttpResponse:
    url = request.POST.get("url", "")
    name = request.POST.get("name", "").strip() or None
    error = None
    try:
        interval = int(request.POST.get("refresh_interval_hours", "24"))
        document = services.document_create_from_url(
            agent=request.agent, url=url, name=name, refresh_interval_hours=interval
        )
    except ValueError:
        error = "Choose a refresh interval."
    except ServiceError as exc:
        error = exc.message.removeprefix("url: ")
    if not request.htmx:
        if error:
            messages.error(request, error)
        else:
            messages.success(request, f"Added {document.source_url}.")
        return redirect("knowledge:document_list")
    context = _table_context(request)
    context.update(
        url_error=error, url_value=url if error else "", name_value=(name or "") if error else ""
    )
    response = render(request, f"{LIST_TEMPLATE}#url-form", context)
    if not error:
        response["HX-Trigger"] = "knowledge-changed"
    return response


def _min_score(value: str | None) -> float:
    """The retrieval test's threshold: a number in [0, 1], else the calibrated default."""
    try:
        number = float(value) if value not in (None, "") else DEFAULT_MIN_SCORE
    except ValueError:
        return DEFAULT_MIN_SCORE
    return number if 0.0 <= number <= 1.0 else DEFAULT_MIN_SCORE


def _retrieval_test(request: ConsoleRequest, *, document_id: str | None = None) -> dict:
    """The retrieval test's form values and hits: the Agent's own search (the service the API
    and the MCP tool call), over all its documents or one."""
    query = request.GET.get("q", "").strip()[:500]
    mode = request.GET.get("mode", "hybrid")
    if mode not in search.MODES:
        mode = "hybrid"
    min_score = _min_score(request.GET.get("min_score"))
    hits = (
        search.search_chunks(
            agent=request.agent,
            query=query,
            limit=SEARCH_LIMIT,
            mode=mode,
            min_score=min_score,
            document_id=document_id,
        )
        if query
        else []
    )
    return {
        "query": query,
        "hits": hits,
        "mode": mode,
        "modes": search.MODES,
        "min_score": min_score,
        "default_min_score": DEFAULT_MIN_SCORE,
    }


@require_GET
@console_view
def document_search(request: ConsoleRequest) -> HttpResponse:
    context = _retrieval_test(request)
    if request.htmx:
        return render(request, f"{LIST_TEMPLATE}#search-results", context)
    context.update(_table_context(request), section="knowledge")
    context["max_upload_mb"] = services.max_upload_bytes() // 2**20
    return render(request, LIST_TEMPLATE, context)


# Bulk actions on ticked documents: (button label, past tense, what happens, dangerous).
DOCUMENTS = RowNoun("document", "documents")
BULK_ACTIONS = {
    "refresh": (
        "Refresh",
        "Refresh started for",
        "Each web page is fetched again; until its new version is ready, search keeps the "
        "current one. Uploaded files cannot be refreshed and are left as they are.",
        False,
    ),
    "disable": (
        "Disable",
        "Disabled",
        "The Agent stops searching them; nothing is deleted and you can enable them again.",
        False,
    ),
    "delete": (
        "Delete",
        "Deleted",
        "Their content and search index are deleted for good.",
        True,
    ),
}


def _bulk_service(request: ConsoleRequest, action: str):
    agent = request.agent
    if action == "refresh":
        return lambda pk: services.document_refresh_request(agent=agent, document_id=pk)
    if action == "disable":
        return lambda pk: services.document_update(agent=agent, document_id=pk, is_enabled=False)
    return lambda pk: services.document_delete(agent=agent, document_id=pk)


@require_POST
@console_view
def document_bulk(request: ConsoleRequest) -> HttpResponse:
    """Refresh, disable or delete the ticked documents: first a page that says how many and
    what happens, then (confirm=1) the action, one document at a time through its service."""
    action = request.POST.get("action", "")
    list_url = reverse("knowledge:document_list")
    if action not in BULK_ACTIONS:
        messages.error(request, "Choose refresh, disable or delete.")
        return redirect(list_url)
    ids = bulk_ticked(request, noun=DOCUMENTS, list_url=list_url)
    if isinstance(ids, HttpResponse):
        return ids
    label, done, consequence, danger = BULK_ACTIONS[action]
    if request.POST.get("confirm") != "1":
        documents = selectors.document_list_by_ids(agent=request.agent, document_ids=ids)
        rows = {document.pk: document.name for document in documents.only("id", "name")}
        if not rows:
            messages.error(request, "None of those documents exists any more.")
            return redirect(list_url)
        return bulk_confirm(
            request,
            section="knowledge",
            action_url=reverse("knowledge:document_bulk"),
            cancel_url=list_url,
            action=action,
            label=label,
            noun=DOCUMENTS,
            consequence=consequence,
            rows=rows,
            danger=danger,
        )
    outcome = bulk_apply(ids, _bulk_service(request, action))
    messages.success(request, outcome.summary(verb=done, noun=DOCUMENTS))
    return redirect(list_url)
