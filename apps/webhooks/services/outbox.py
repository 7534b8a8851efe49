"""Recording events (the outbox): a delivery row is written in the transaction that caused the
event, and its send is queued only after that transaction commits."""

from __future__ import annotations

from datetime import datetime
from functools import partial

import orjson
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.activity.events import RunRecorded
from apps.activity.models import Run
from apps.activity.rendering import run_to_dict
from apps.common.time import iso
from apps.usage.events import ThresholdAnnounced
from apps.webhooks.models import USAGE_THRESHOLD_EVENT, DeliveryStatus, Webhook, WebhookDelivery
from apps.webhooks.services.dispatch import _enqueue_deliver

END_STATUSES = ("completed", "failed", "aborted")


def event_body(*, event_type: str, at: datetime, data: dict) -> str:
    return orjson.dumps({"type": event_type, "timestamp": iso(at), "data": data}).decode()


def delivery_record_on_run_recorded(event: RunRecorded) -> None:
    """The listener activity announces recorded runs to (registered in WebhooksConfig)."""
    if event.ended:
        delivery_record_for_run(run=event.run)


def delivery_record_for_run(*, run: Run) -> WebhookDelivery | None:
    """Called inside the transaction in which `run` reached an end state.

    Creates the run's one delivery when its Agent's webhook is enabled and subscribed to
    `run.<status>`; while the webhook is paused the delivery waits as `paused`. The send is
    queued after commit; if the broker is down the dispatcher sweep sends it instead.
    """
    if run.status not in END_STATUSES:
        return None
    event_type = f"run.{run.status}"
    webhook = Webhook.objects.filter(agent_id=run.agent_id).first()
    if webhook is None or not webhook.enabled or not webhook.url:
        return None
    if event_type not in webhook.events:
        return None
    existing = WebhookDelivery.objects.filter(
        webhook=webhook, run_id=run.id, event_type=event_type, is_test=False
    ).first()
    if existing is not None:
        return existing

    now = timezone.now()
    held = webhook.paused_at is not None
    try:
        with transaction.atomic():  # a savepoint: a duplicate must not break the caller's work
            delivery = WebhookDelivery.objects.create(
                webhook=webhook,
                agent_id=run.agent_id,
                run_id=run.id,
                event_type=event_type,
                is_test=False,
                body=event_body(event_type=event_type, at=now, data=run_to_dict(run)),
                status=DeliveryStatus.PAUSED if held else DeliveryStatus.PENDING,
                next_attempt_at=None if held else now,
                created_at=now,
                updated_at=now,
            )
    except IntegrityError:  # recorded concurrently: the first one stands
        return WebhookDelivery.objects.filter(
            webhook=webhook, run_id=run.id, event_type=event_type, is_test=False
        ).first()
    if not held:
        transaction.on_commit(partial(_enqueue_deliver, delivery.pk), robust=True)
    return delivery


def delivery_record_on_threshold_reached(event: ThresholdAnnounced) -> None:
    """The listener usage announces reached thresholds to (registered in WebhooksConfig)."""
    delivery_record_for_usage_threshold(
        workspace_id=event.workspace_id, data=event.data, at=event.at
    )


def delivery_record_for_usage_threshold(
    *, workspace_id: str, data: dict, at: datetime
) -> list[WebhookDelivery]:
    """Called inside the transaction that recorded a workspace's credits
    reaching a threshold: one `usage.threshold_reached` delivery, with `run_id` null, for each
    active Agent of the workspace whose webhook is enabled and subscribed. Usage records each
    threshold once per month, so no unique key is needed here."""
    webhooks = Webhook.objects.filter(
        agent__workspace_id=workspace_id,
        agent__status="active",
        enabled=True,
        url__isnull=False,
    ).order_by("agent_id")
    deliveries = []
    for webhook in webhooks:
        if USAGE_THRESHOLD_EVENT not in webhook.events:
            continue
        held = webhook.paused_at is not None
        delivery = WebhookDelivery.objects.create(
            webhook=webhook,
            agent_id=webhook.agent_id,
            run_id=None,
            event_type=USAGE_THRESHOLD_EVENT,
            is_test=False,
            body=event_body(event_type=USAGE_THRESHOLD_EVENT, at=at, data=data),
            status=DeliveryStatus.PAUSED if held else DeliveryStatus.PENDING,
            next_attempt_at=None if held else at,
            created_at=at,
            updated_at=at,
        )
        if not held:
            transaction.on_commit(partial(_enqueue_deliver, delivery.pk), robust=True)
        deliveries.append(delivery)
    return deliveries
