"""The console's Webhooks page (owners only): configuration, secret, test send, pause, and the
deliveries table with each delivery's attempt timeline and an in-place retry.

Thin: every rule lives in apps.webhooks.services and selectors, shared with the API.
"""

from datetime import UTC, datetime, timedelta

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from apps.common.errors import BadRequest, NotFound, ServiceError
from apps.common.export import export_format, export_response
from apps.common.keyset import paginate
from apps.common.sorting import sorted_list
from apps.webhooks import selectors, services
from apps.webhooks.forms import WebhookConfigForm
from apps.webhooks.models import EVENT_TYPES, RUN_EVENT_TYPES, DeliveryStatus
from apps.webhooks.rendering import DELIVERY_COLUMNS, delivery_to_dict
from apps.workspaces.console import (
    ConsoleRequest,
    RowNoun,
    bounded_count,
    bulk_confirm,
    bulk_ticked,
    console_view,
    keyset_page,
    render_page,
)

PAGE_SIZE = 25
TEMPLATE = "webhooks/webhook_detail.html"

DELIVERIES = RowNoun("delivery", "deliveries")


def _deliveries(request: ConsoleRequest) -> dict:
    status = request.GET.get("status") or None
    event_type = request.GET.get("event_type") or None
    try:
        deliveries = selectors.delivery_list(
            agent=request.agent, status=status, event_type=event_type
        )
        filter_error = None
    except BadRequest as exc:  # an edited filter: show every delivery and say why
        status = event_type = None
        deliveries = selectors.delivery_list(agent=request.agent)
        filter_error = exc.message
    ordered, keyset, sort_columns = sorted_list(selectors.DELIVERY_SORTS, deliveries, request.GET)
    result, page_error = keyset_page(
        request, lambda page: paginate(ordered, keyset=keyset, page=page), limit=PAGE_SIZE
    )
    return {
        "sort_columns": sort_columns,
        "count": bounded_count(deliveries),
        "filtering": bool(status or event_type),
        "deliveries": result.rows,
        "next_cursor": result.next_cursor,
        "previous_cursor": result.previous_cursor,
        "list_error": filter_error or page_error,
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "status_filter": status or "",
        "event_filter": event_type or "",
        "statuses": DeliveryStatus.values,
        "bulk_actions": [("retry", "Retry", False)],
        "event_types": EVENT_TYPES,
    }


def _page(
    request: ConsoleRequest, *, form=None, status: int = 200, extra: dict | None = None
) -> HttpResponse:
    webhook = selectors.webhook_get(agent=request.agent)
    if form is None:
        form = WebhookConfigForm(
            initial={
                "url": webhook.url if webhook else "",
                # A new webhook starts with the run events; usage alerts are opt-in.
                "events": webhook.events if webhook else list(RUN_EVENT_TYPES),
                "enabled": webhook.enabled if webhook else False,
            }
        )
    context = {
        "section": "webhooks",
        "webhook": webhook,
        "health": selectors.webhook_health(agent=request.agent, webhook=webhook),
        "recover_since": _recover_default(webhook),
        "form": form,
        "pause_after": services.pause_after_failures(),
        **_deliveries(request),
        **(extra or {}),
    }
    return render_page(request, TEMPLATE, context, partial="delivery-table", status=status)


@console_view(owner_required=True)
def webhook_detail(request: ConsoleRequest) -> HttpResponse:
    return _page(request)


@require_POST
@console_view(owner_required=True)
def webhook_config(request: ConsoleRequest) -> HttpResponse:
    """Save the URL and events. Sending is switched on here only by "Save and start sending"
    (`enabled`), and off only by the Disable button: a failed save never leaves the form
    showing a state the badge contradicts."""
    form = WebhookConfigForm(request.POST)
    if form.is_valid():
        changes: dict = {"url": form.cleaned_data["url"], "events": form.cleaned_data["events"]}
        if form.cleaned_data["enabled"]:
            changes["enabled"] = True
        try:
            services.webhook_update(agent=request.agent, **changes)
        except ServiceError as exc:  # "field: message" from the service goes under that field
            name, _, text = exc.message.partition(": ")
            if name in form.fields and text:
                form.add_error(name, text)
            else:
                form.add_error(None, exc.message)
        else:
            messages.success(request, "Webhook settings saved.")
            return redirect("webhooks:webhook_detail")
    return _page(request, form=form, status=400)


@require_POST
@console_view(owner_required=True)
def webhook_enable(request: ConsoleRequest) -> HttpResponse:
    """Switch sending on or off; the saved URL is not checked again (it did not change)."""
    enabled = request.POST.get("enabled") == "1"
    try:
        services.webhook_update(agent=request.agent, enabled=enabled)
    except ServiceError as exc:
        messages.error(request, exc.message.partition(": ")[2] or exc.message)
    else:
        messages.success(
            request,
            "Sending is on." if enabled else "Sending is off: no deliveries are recorded.",
        )
    return redirect("webhooks:webhook_detail")


def _recover_default(webhook) -> str:
    """The "retry all failed since" field's first value: a day before the endpoint started
    failing (a delivery made before then may have used its retries up during the streak),
    or a day ago."""
    since = (webhook and webhook.failing_since) or timezone.now()
    since -= timedelta(days=1)
    return since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def _recover_since(raw: str | None) -> datetime:
    """The form's UTC time (`datetime-local` sends it without an offset)."""
    try:
        since = datetime.fromisoformat((raw or "").strip())
    except ValueError:
        raise BadRequest("Give the time as YYYY-MM-DD HH:MM (UTC).") from None
    return since.replace(tzinfo=UTC) if since.tzinfo is None else since


@console_view(owner_required=True)
def delivery_recover(request: ConsoleRequest) -> HttpResponse:
    """GET: how many failed deliveries "retry all failed since" would send, asking to
    confirm; POST: send them again."""
    raw = request.POST.get("since") if request.method == "POST" else request.GET.get("since")
    try:
        since = _recover_since(raw)
        if request.method == "POST":
            count = services.deliveries_recover(agent=request.agent, since=since)
            messages.success(
                request,
                f"{count} failed {'delivery is' if count == 1 else 'deliveries are'} "
                "being sent again."
                if count
                else "No failed delivery to send again.",
            )
            return redirect("webhooks:webhook_detail")
        count = selectors.delivery_recoverable(agent=request.agent, since=since).count()
        context: dict = {"recover": {"since": since, "count": count, "raw": raw}}
    except ServiceError as exc:
        if request.method == "POST":
            messages.error(request, exc.message.partition(": ")[2] or exc.message)
            return redirect("webhooks:webhook_detail")
        context = {"recover": {"error": exc.message.partition(": ")[2] or exc.message}}
    if request.htmx:
        webhook = selectors.webhook_get(agent=request.agent)
        context["health"] = selectors.webhook_health(agent=request.agent, webhook=webhook)
        return render(request, f"{TEMPLATE}#recover-panel", context)
    return _page(request, extra=context)


@require_POST
@console_view(owner_required=True)
def webhook_pause(request: ConsoleRequest) -> HttpResponse:
    paused = request.POST.get("paused") == "1"
    services.webhook_update(agent=request.agent, paused=paused)
    messages.success(
        request,
        "Deliveries paused." if paused else "Deliveries resumed; waiting ones are being sent.",
    )
    return redirect("webhooks:webhook_detail")


@require_POST
@console_view(owner_required=True)
def webhook_secret(request: ConsoleRequest) -> HttpResponse:
    """Reveal (action=reveal) or rotate (action=rotate) the signing secret."""
    rotated = request.POST.get("action") == "rotate"
    if rotated:
        _webhook, secret = services.webhook_secret_rotate(agent=request.agent)
    else:
        secret = services.webhook_secret_reveal(agent=request.agent)
    context = {"secret": secret, "rotated": rotated}
    if request.htmx:
        return render(request, f"{TEMPLATE}#secret-panel", context)
    if rotated:
        messages.success(request, "Secret rotated. The previous one keeps working for 24 hours.")
    return _page(request, extra=context)


@require_POST
@console_view(owner_required=True)
def webhook_test(request: ConsoleRequest) -> HttpResponse:
    event_type = request.POST.get("event_type") or None
    try:
        delivery = services.delivery_send_test(agent=request.agent, event_type=event_type)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        if delivery.status == DeliveryStatus.SUCCEEDED:
            messages.success(request, f"Test event delivered ({delivery.response_status}).")
        else:
            messages.error(request, f"Test event failed: {delivery.error_message}")
    return redirect("webhooks:webhook_detail")


@console_view(owner_required=True)
def delivery_detail(request: ConsoleRequest, delivery_id: str) -> HttpResponse:
    delivery = selectors.delivery_get(agent=request.agent, delivery_id=delivery_id)
    context = {"section": "webhooks", "delivery": delivery}
    if request.htmx:  # expanded in place inside the deliveries table
        return render(request, "webhooks/delivery_detail.html#attempt-timeline", context)
    return render(request, "webhooks/delivery_detail.html", context)


@console_view(owner_required=True)
def delivery_row(request: ConsoleRequest, delivery_id: str) -> HttpResponse:
    """The row of a delivery that is being sent or retried soon, polled until it settles."""
    delivery = selectors.delivery_get(agent=request.agent, delivery_id=delivery_id)
    response = render(request, f"{TEMPLATE}#delivery-row", {"delivery": delivery})
    if not delivery.is_settling:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@require_POST
@console_view(owner_required=True)
def delivery_retry(request: ConsoleRequest, delivery_id: str) -> HttpResponse:
    try:
        delivery = services.delivery_retry(agent=request.agent, delivery_id=delivery_id)
    except NotFound:
        raise  # console_view shows the 404 page
    except ServiceError as exc:
        if not request.htmx:
            messages.error(request, exc.message)
            return redirect("webhooks:webhook_detail")
        delivery = selectors.delivery_get(agent=request.agent, delivery_id=delivery_id)
        return render(
            request,
            f"{TEMPLATE}#delivery-row",
            {"delivery": delivery, "row_error": exc.message, "expanded": True},
            status=200,
        )
    if request.htmx:
        return render(request, f"{TEMPLATE}#delivery-row", {"delivery": delivery, "expanded": True})
    messages.success(request, f"Retried: {delivery.status}.")
    return redirect("webhooks:webhook_detail")


@console_view(owner_required=True)
def delivery_export(request: ConsoleRequest) -> HttpResponseBase:
    """Every delivery the table's filters match, in the table's order, as CSV or JSON (the
    API's delivery objects)."""
    try:
        fmt = export_format(request.GET.get("format"))
        deliveries = selectors.delivery_list(
            agent=request.agent,
            status=request.GET.get("status") or None,
            event_type=request.GET.get("event_type") or None,
        )
    except BadRequest as exc:
        messages.error(request, f"Nothing exported: {exc.message}")
        return redirect("webhooks:webhook_detail")
    ordered, keyset, _headers = sorted_list(selectors.DELIVERY_SORTS, deliveries, request.GET)
    return export_response(
        queryset=ordered,
        keyset=keyset,
        render=delivery_to_dict,
        columns=DELIVERY_COLUMNS,
        filename=f"webhook-deliveries-{request.agent.pk}",
        fmt=fmt,
    )


@require_POST
@console_view(owner_required=True)
def delivery_bulk_retry(request: ConsoleRequest) -> HttpResponse:
    """Retry the ticked deliveries: a page says how many will be sent again, then
    (confirm=1) they become due now and the dispatcher sends them."""
    list_url = reverse("webhooks:webhook_detail")
    ids = bulk_ticked(request, noun=DELIVERIES, list_url=list_url)
    if isinstance(ids, HttpResponse):
        return ids
    if request.POST.get("confirm") != "1":
        retryable = (
            selectors.delivery_list(agent=request.agent)
            .filter(pk__in=ids, status__in=services.RETRYABLE)
            .order_by("-created_at", "-id")
        )
        rows = {d.pk: f"{d.event_type} · {d.pk} ({d.get_status_display()})" for d in retryable}
        if not rows:
            messages.error(request, "None of those deliveries can be retried: sent or in flight.")
            return redirect(list_url)
        left = len(ids) - len(rows)
        return bulk_confirm(
            request,
            section="webhooks",
            action_url=reverse("webhooks:delivery_bulk_retry"),
            cancel_url=list_url,
            action="retry",
            label="Retry",
            noun=DELIVERIES,
            consequence="They are sent again now by the dispatcher, each once."
            + (
                f" {left} of those ticked already arrived or are in flight and stay as they are."
                if left
                else ""
            ),
            rows=rows,
        )
    try:
        count = services.deliveries_retry(agent=request.agent, delivery_ids=ids)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"{count} {'delivery is' if count == 1 else 'deliveries are'} being sent again.",
        )
    return redirect("webhooks:webhook_detail")
