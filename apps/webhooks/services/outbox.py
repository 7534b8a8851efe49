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
from apps.scores.events import ScoresCreated
from apps.usage.events import ThresholdAnnounced
from apps.webhooks.models import (
    SCORE_CREATED_EVENT,
    USAGE_THRESHOLD_EVENT,
    DeliveryStatus,
    Webhook,
    WebhookDelivery,
)
from apps.webhooks.services.dispatch import _enqueue_deliver

END_STATUSES = ("completed", "failed", "aborted")
# New scores' deliveries queued right after commit; the dispatcher sends the rest.
SCORE_SENDS_QUEUED = 20


def event_body(*, event_type: str, at: datetime, data: dict) -> str:
    return orjson.dumps({"type": event_type, "timestamp": iso(at), "data": data}).decode()


def delivery_record_on_runs_recorded(events: list[RunRecorded]) -> None:
    """The listener activity announces each batch of recorded runs to (registered in
    WebhooksConfig): one delivery per run the batch ended."""
    ended = [event.run for event in events if event.ended]
    by_agent: dict[str, list[Run]] = {}
    for run in ended:
        by_agent.setdefault(run.agent_id, []).append(run)
    for runs in by_agent.values():
        deliveries_record_for_runs(runs=runs)


def delivery_record_for_run(*, run: Run) -> WebhookDelivery | None:
    """Called inside the transaction in which `run` reached an end state (see below)."""
    return deliveries_record_for_runs(runs=[run]).get(run.id)


def deliveries_record_for_runs(*, runs: list[Run]) -> dict[str, WebhookDelivery]:
    """Called inside the transaction in which `runs` (of one Agent) reached an end state.

    Creates each run's one delivery when its Agent's webhook is enabled and subscribed to
    `run.<status>`; while the webhook is paused the delivery waits as `paused`. The sends are
    queued after commit; if the broker is down the dispatcher sweep sends them instead. A few
    statements for the whole batch: the webhook, the deliveries already recorded, one insert.
    Returns run id -> its delivery (new or already recorded).
    """
    runs = [run for run in runs if run.status in END_STATUSES]
    if not runs:
        return {}
    webhook = Webhook.objects.filter(agent_id=runs[0].agent_id).first()
    if webhook is None or not webhook.enabled or not webhook.url:
        return {}
    runs = [run for run in runs if f"run.{run.status}" in webhook.events]
    if not runs:
        return {}
    event_types = {run.id: f"run.{run.status}" for run in runs}
    found = {
        str(delivery.run_id): delivery
        for delivery in WebhookDelivery.objects.filter(
            webhook=webhook, run_id__in=list(event_types), is_test=False
        )
        if delivery.event_type == event_types.get(delivery.run_id or "")
    }
    now = timezone.now()
    held = webhook.paused_at is not None
    new = [_delivery_new(webhook, run, now=now, held=held) for run in runs if run.id not in found]
    try:
        with transaction.atomic():  # a savepoint: a duplicate must not break the caller's work
            WebhookDelivery.objects.bulk_create(new)
    except IntegrityError:  # some recorded concurrently: the first ones stand
        kept = []
        for delivery in new:
            delivery.pk = None
            try:
                with transaction.atomic():
                    delivery.save(force_insert=True)
                kept.append(delivery)
            except IntegrityError:
                continue
        new = kept
    for delivery in new:
        found[str(delivery.run_id)] = delivery
        if not held:
            transaction.on_commit(partial(_enqueue_deliver, delivery.pk), robust=True)
    return found


def _delivery_new(webhook: Webhook, run: Run, *, now: datetime, held: bool) -> WebhookDelivery:
    event_type = f"run.{run.status}"
    return WebhookDelivery(
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


def delivery_record_on_scores_created(event: ScoresCreated) -> None:
    """The listener scores announces new scores to (registered in WebhooksConfig): one
    `score.created` delivery per new score when the Agent's webhook is subscribed. A score is
    announced once (only when it is new), so its delivery needs no unique key; `run_id` stays
    null (a run has many scores; the unique key of run events is one per run and event).
    A batch of 1,000 scores queues its first few sends after commit and leaves the rest to
    the dispatcher's sweep (`webhooks.dispatch_due`), instead of 1,000 broker round trips in
    the request."""
    webhook = Webhook.objects.filter(agent_id=event.agent_id).first()
    if (
        webhook is None
        or not webhook.enabled
        or not webhook.url
        or SCORE_CREATED_EVENT not in webhook.events
    ):
        return
    now = timezone.now()
    held = webhook.paused_at is not None
    new = [
        WebhookDelivery(
            webhook=webhook,
            agent_id=event.agent_id,
            run_id=None,
            event_type=SCORE_CREATED_EVENT,
            is_test=False,
            body=event_body(event_type=SCORE_CREATED_EVENT, at=now, data=data),
            status=DeliveryStatus.PAUSED if held else DeliveryStatus.PENDING,
            next_attempt_at=None if held else now,
            created_at=now,
            updated_at=now,
        )
        for data in event.data
    ]
    WebhookDelivery.objects.bulk_create(new)
    if not held:
        for delivery in new[:SCORE_SENDS_QUEUED]:
            transaction.on_commit(partial(_enqueue_deliver, delivery.pk), robust=True)
