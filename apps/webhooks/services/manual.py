"""An owner's manual actions on deliveries: retry one now, send every failed one again (Svix's
"recover"), or send a test event built from a real run of the Agent (or an example with the
same shape)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.activity.models import Run
from apps.activity.rendering import run_to_dict
from apps.common.errors import BadRequest, Conflict, NotFound
from apps.common.ids import new_id
from apps.scores.events import score_example
from apps.usage.events import threshold_example
from apps.webhooks.models import (
    EVENT_TYPES,
    SCORE_CREATED_EVENT,
    USAGE_THRESHOLD_EVENT,
    ClaimKind,
    DeliveryStatus,
    Webhook,
    WebhookDelivery,
)
from apps.webhooks.services.audit import webhook_audit
from apps.webhooks.services.dispatch import _enqueue_dispatch
from apps.webhooks.services.outbox import event_body
from apps.webhooks.services.sending import _attempt, _mark_sending


def delivery_retry(*, agent, delivery_id: str) -> WebhookDelivery:
    """Send a delivery now, whatever its status except `sending` (409); returns it after."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("webhook")
            .filter(agent=agent, pk=delivery_id)
            .first()
        )
        if delivery is None:
            raise NotFound("No such webhook delivery for this Agent.")
        if delivery.status == DeliveryStatus.SENDING:
            raise Conflict("This delivery is being sent right now; retry when the attempt ends.")
        if not delivery.webhook.url:
            raise Conflict("The webhook has no URL to send to; set one first.")
        claim = _mark_sending(delivery, kind=ClaimKind.MANUAL, now=timezone.now())
        webhook_audit(
            delivery.webhook,
            "webhook.delivery_retried",
            {"delivery_id": delivery.pk, "event_type": delivery.event_type},
        )
    _attempt(claim)
    from apps.webhooks.selectors import delivery_get

    return delivery_get(agent=agent, delivery_id=delivery_id)


def deliveries_recover(*, agent, since: datetime, now: datetime | None = None) -> int:
    """Send again every failed delivery created since `since` (not test sends); returns how
    many. They become due now and the dispatcher sends them: one attempt each on the schedule
    they had, so one that fails again is `failed` again. While the webhook is paused or
    disabled they wait as `paused` and go when it resumes."""
    from apps.webhooks.selectors import delivery_recoverable, webhook_get

    if since.tzinfo is None:
        raise BadRequest("since: Give a time with its time zone.")
    now = now or timezone.now()
    if since > now:
        raise BadRequest("since: Must not be in the future.")
    webhook = webhook_get(agent=agent)
    if webhook is None or not webhook.url:
        raise Conflict("The webhook has no URL to send to; set one first.")
    with transaction.atomic():
        count = _requeue(delivery_recoverable(agent=agent, since=since), webhook=webhook, now=now)
        webhook_audit(webhook, "webhook.deliveries_recovered", {"since": since, "count": count})
    return count


def _requeue(deliveries, *, webhook, now: datetime) -> int:
    """Make `deliveries` due now (held as `paused` while the webhook is inactive); the
    dispatcher sends them. Returns how many."""
    active = webhook.is_active
    with transaction.atomic():
        # Filtered on status again by the UPDATE itself: a row a dispatcher moved meanwhile
        # is left alone.
        count = deliveries.update(
            status=DeliveryStatus.PENDING if active else DeliveryStatus.PAUSED,
            next_attempt_at=now if active else None,
            updated_at=now,
        )
        if count and active:
            transaction.on_commit(_enqueue_dispatch, robust=True)
    return count


# The statuses a bulk retry sends again: not `sending` (in flight) nor `succeeded` (arrived).
RETRYABLE = (DeliveryStatus.PENDING, DeliveryStatus.FAILED, DeliveryStatus.PAUSED)


def deliveries_retry(*, agent, delivery_ids: list[str], now: datetime | None = None) -> int:
    """Retry several deliveries (the console's bulk Retry): those of `delivery_ids` that are
    pending, failed or paused become due now and the dispatcher sends them, rather than this
    request sending each in turn. Returns how many; the others are left as they are."""
    from apps.webhooks.selectors import webhook_get

    webhook = webhook_get(agent=agent)
    if webhook is None or not webhook.url:
        raise Conflict("The webhook has no URL to send to; set one first.")
    chosen = WebhookDelivery.objects.filter(agent=agent, pk__in=delivery_ids, status__in=RETRYABLE)
    with transaction.atomic():
        count = _requeue(chosen, webhook=webhook, now=now or timezone.now())
        if count:
            webhook_audit(
                webhook,
                "webhook.deliveries_retried",
                {"delivery_ids": delivery_ids, "count": count},
            )
    return count


def _sample_run(*, agent, status: str, now: datetime) -> dict:
    """The Agent's latest run of `status`, or an example run: both rendered by `run_to_dict`,
    so a test send has exactly the shape of a real event."""
    run = Run.objects.filter(agent=agent, status=status).order_by("-created_at", "-id").first()
    if run is None:
        run = Run(
            id=new_id("run"),
            agent=agent,
            conversation_id=new_id("conv"),
            user_id=None,
            request_id=new_id("req"),
            status=status,
            model_id="example-model",
            sdk_version="1.0.0",
            protocol_version=1,
            input_tokens=120,
            output_tokens=48,
            total_tokens=168,
            cache_read_tokens=0,
            cache_write_tokens=0,
            credits_charged=0.5,
            tool_names=[],
            failed_tool_names=[],
            component_kinds=[],
            error_code="example_error" if status == "failed" else None,
            first_chunk_at=now - timedelta(seconds=2),
            completed_at=now,
            total_turn_latency_ms=2400.0,
            created_at=now - timedelta(seconds=3),
            updated_at=now,
        )
    return run_to_dict(run)


def delivery_send_test(*, agent, event_type: str | None = None) -> WebhookDelivery:
    """Send a test event now (`is_test=true`), even while paused or disabled; returns it."""
    if event_type is not None and event_type not in EVENT_TYPES:
        raise BadRequest(f"event_type: Must be one of {', '.join(EVENT_TYPES)}.")
    webhook = Webhook.objects.filter(agent=agent).first()
    if webhook is None or not webhook.url:
        raise Conflict("The webhook has no URL to send to; set one first.")
    if event_type is None:
        event_type = webhook.events[0] if webhook.events else EVENT_TYPES[0]
    now = timezone.now()
    if event_type == USAGE_THRESHOLD_EVENT:
        data, run_id = threshold_example(workspace_id=agent.workspace_id, now=now), None
    elif event_type == SCORE_CREATED_EVENT:
        data, run_id = score_example(now=now), None
    else:
        data = _sample_run(agent=agent, status=event_type.removeprefix("run."), now=now)
        run_id = data["id"]
    with transaction.atomic():
        delivery = WebhookDelivery.objects.create(
            webhook=webhook,
            agent=agent,
            run_id=run_id,
            event_type=event_type,
            is_test=True,
            body=event_body(event_type=event_type, at=now, data=data),
            status=DeliveryStatus.FAILED,  # the state it returns to if this send fails
            created_at=now,
            updated_at=now,
        )
        claim = _mark_sending(delivery, kind=ClaimKind.MANUAL, now=now)
        webhook_audit(
            webhook, "webhook.test_sent", {"delivery_id": delivery.pk, "event_type": event_type}
        )
    _attempt(claim)
    from apps.webhooks.selectors import delivery_get

    return delivery_get(agent=agent, delivery_id=delivery.pk)
