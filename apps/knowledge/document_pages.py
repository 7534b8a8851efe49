"""Console pages of one knowledge document: its row in the list (polled while it works) with
its actions (rename, enable, refresh, schedule, retry, delete), its file and Markdown, and its
page with a search box. Thin: every rule lives in services and selectors, shared with the API."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.http import FileResponse, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from apps.common.errors import BadRequest, NotFound, ServiceError
from apps.knowledge import events, selectors, services
from apps.knowledge.gaps import selectors as gap_selectors
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.pages import LIST_TEMPLATE, _interval_choices, _retrieval_test
from apps.knowledge.relevance import DEFAULT_MIN_SCORE
from apps.workspaces.console import ConsoleRequest, console_view, remote_images_allowed

DETAIL_TEMPLATE = "knowledge/document_detail.html"


def _row(request: ConsoleRequest, document: KnowledgeDocument, *, error: str | None = None):
    counts = gap_selectors.document_retrieval_counts(
        agent=request.agent, document_ids=[document.pk]
    )
    document.retrieved_runs = counts.get(document.pk, 0)  # type: ignore[attr-defined]
    context = {"document": document, "interval_choices": _interval_choices(), "row_error": error}
    response = render(request, f"{LIST_TEMPLATE}#document-row", context)
    if request.method == "GET" and not document.needs_polling:
        # The row has settled: htmx swaps this last answer in and stops polling.
        response.status_code = HttpResponseStopPolling.status_code
    return response


def _get_or_404(request: ConsoleRequest, document_id: str) -> KnowledgeDocument:
    """The Agent's document; NotFound reaches console_view, which shows the 404 page."""
    return selectors.document_get(agent=request.agent, document_id=document_id)


@require_GET
@console_view
def document_row(request: ConsoleRequest, document_id: str) -> HttpResponse:
    return _row(request, _get_or_404(request, document_id))


def _row_action(request: ConsoleRequest, document_id: str, action) -> HttpResponse:
    error = None
    try:
        document = action()
    except ServiceError as exc:
        error = exc.message
        document = _get_or_404(request, document_id)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(_back_to(request, document))
    return _row(request, document, error=error)


def _back_to(request: ConsoleRequest, document: KnowledgeDocument) -> str:
    """Where a plain (non-htmx) form goes back to: the document's page when it was sent from
    there, else the list. Never a URL the form could point anywhere else."""
    detail = reverse("knowledge:document_detail", args=[document.pk])
    return detail if request.POST.get("next") == detail else reverse("knowledge:document_list")


@require_POST
@console_view
def document_rename(request: ConsoleRequest, document_id: str) -> HttpResponse:
    return _row_action(
        request,
        document_id,
        lambda: services.document_update(
            agent=request.agent, document_id=document_id, name=request.POST.get("name", "")
        ),
    )


@require_POST
@console_view
def document_toggle(request: ConsoleRequest, document_id: str) -> HttpResponse:
    enable = request.POST.get("is_enabled") == "true"
    return _row_action(
        request,
        document_id,
        lambda: services.document_update(
            agent=request.agent, document_id=document_id, is_enabled=enable
        ),
    )


@require_POST
@console_view
def document_refresh(request: ConsoleRequest, document_id: str) -> HttpResponse:
    return _row_action(
        request,
        document_id,
        lambda: services.document_refresh_request(agent=request.agent, document_id=document_id),
    )


@require_POST
@console_view
def document_schedule(request: ConsoleRequest, document_id: str) -> HttpResponse:
    def action():
        try:
            hours = int(request.POST.get("refresh_interval_hours", ""))
        except ValueError:
            raise BadRequest("Choose a refresh interval.") from None
        return services.document_schedule(
            agent=request.agent, document_id=document_id, refresh_interval_hours=hours
        )

    return _row_action(request, document_id, action)


@require_POST
@console_view
def document_retry(request: ConsoleRequest, document_id: str) -> HttpResponse:
    return _row_action(
        request,
        document_id,
        lambda: services.document_retry(agent=request.agent, document_id=document_id),
    )


@require_GET
@console_view
def document_download(request: ConsoleRequest, document_id: str) -> FileResponse:
    """The uploaded file as it was received, as an attachment (never rendered by the browser)."""
    document = _get_or_404(request, document_id)
    if document.source_type != KnowledgeDocument.SourceType.FILE or not document.file:
        raise NotFound("This document has no uploaded file; it was added from a URL.")
    try:
        handle = document.file.open("rb")
    except FileNotFoundError:
        raise NotFound("The uploaded file is no longer stored.") from None
    return FileResponse(
        handle,
        as_attachment=True,
        filename=document.file_name or document.name,
        content_type="application/octet-stream",
    )


@require_GET
@console_view
def document_markdown(request: ConsoleRequest, document_id: str) -> HttpResponse:
    """The indexed markdown exactly as extracted, as plain text (the API's content)."""
    version = selectors.document_content(agent=request.agent, document_id=document_id)
    response = HttpResponse(version.markdown, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = "inline"
    return response


@require_POST
@console_view
def document_delete(request: ConsoleRequest, document_id: str) -> HttpResponse:
    document = _get_or_404(request, document_id)
    services.document_delete(agent=request.agent, document_id=document_id)
    if request.htmx:
        return HttpResponse("")  # the row's outerHTML becomes nothing
    messages.success(request, f"Deleted “{document.name}”.")
    return redirect("knowledge:document_list")


@require_GET
@console_view
def document_search_within(request: ConsoleRequest, document_id: str) -> HttpResponse:
    """The document page's search box: the Agent's retrieval restricted to this document.
    htmx gets the results alone; a plain GET (no script) the whole page with them."""
    document = _get_or_404(request, document_id)
    context = _retrieval_test(request, document_id=document.pk)
    context["document"] = document
    if request.htmx:
        return render(request, f"{DETAIL_TEMPLATE}#search-results", context)
    return _document_page(request, document, retrieval=context)


@require_GET
@console_view
def document_detail(request: ConsoleRequest, document_id: str) -> HttpResponse:
    document = _get_or_404(request, document_id)
    if request.htmx and request.htmx.target == "embedding-progress":
        response = render(request, f"{DETAIL_TEMPLATE}#embedding-progress", {"document": document})
        if not document.is_embedding:
            response.status_code = HttpResponseStopPolling.status_code
        return response
    if request.htmx and request.htmx.target == "document-status":
        response = render(request, f"{DETAIL_TEMPLATE}#document-status", {"document": document})
        if not document.is_working:
            # Settled: stop polling and reload so the new content shows.
            response.status_code = HttpResponseStopPolling.status_code
            response["HX-Refresh"] = "true"
        return response
    return _document_page(request, document)


def _document_page(
    request: ConsoleRequest, document: KnowledgeDocument, *, retrieval: dict | None = None
) -> HttpResponse:
    """The whole document page; `retrieval`: the search box's values and hits when asked."""
    try:
        version = selectors.document_content(agent=request.agent, document_id=document.pk)
    except ServiceError:
        version = None
    return render(
        request,
        DETAIL_TEMPLATE,
        {
            **(
                retrieval
                or {"min_score": DEFAULT_MIN_SCORE, "default_min_score": DEFAULT_MIN_SCORE}
            ),
            "section": "knowledge",
            "document": document,
            "version": version,
            "chunk_count": selectors.version_chunk_count(version=version) if version else 0,
            "run_counts": events.document_run_counts(agent=request.agent, document_id=document.pk),
            "retrievals": gap_selectors.document_retrievals(
                agent=request.agent, document_id=document.pk
            ),
            "week_ago": (timezone.now() - timedelta(days=7)).date().isoformat(),
            "month_ago": (timezone.now() - timedelta(days=30)).date().isoformat(),
            "interval_choices": _interval_choices(),
            "remote_images": remote_images_allowed(request),
        },
    )
