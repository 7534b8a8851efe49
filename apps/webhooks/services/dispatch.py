"""Dispatching deliveries: queueing a new one, and the sweeps that take over expired claims,
hold a paused webhook's deliveries and send the due ones (claiming and sending one is
`sending`; recording its attempt is `attempts`).

Delivery life cycle (docs/webhooks.md has the full table):

    pending --claim--> sending --2xx--> succeeded
                          |----failure, schedule left--> pending (next_attempt_at = backoff)
                          |----failure, schedule used up--> failed
    pending --webhook paused or disabled--> paused --owner resumes--> pending

A dispatcher claims a delivery in a short transaction (status `sending`, a claim token and a
lease), commits, posts with connect and read timeouts, then records the attempt in a second
transaction that only succeeds while the claim is still its own. A claim whose lease ran out (its
worker was killed mid-send) is taken over by the sweeper, which records that attempt as
interrupted, exactly once.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.webhooks.models import AttemptStatus, DeliveryStatus, Webhook, WebhookDelivery
from apps.webhooks.services.attempts import Outcome, _record_locked
from apps.webhooks.services.sending import _attempt, _claim_due, _lease

logger = logging.getLogger(__name__)


def queue_limit() -> int:
    return int(settings.WEBHOOK_QUEUE_LIMIT)


def _enqueue_deliver(delivery_id: str) -> None:
    """Queue `webhooks.deliver` for a new delivery, unless the webhook queue already holds
    WEBHOOK_QUEUE_LIMIT messages: then the dispatcher's sweep sends it (it is a due row either
    way), so a burst of deliveries to a dead endpoint cannot grow the broker without bound."""
    from apps.webhooks.tasks import deliver, webhook_queue_depth

    try:
        if webhook_queue_depth() >= queue_limit():
            logger.info("webhook queue full: delivery %s waits for the dispatcher", delivery_id)
            return
        deliver.apply_async((delivery_id,), retry=False)
    except Exception as exc:  # broker down: the dispatch_due sweep finds the row, nothing is lost
        logger.warning(
            "could not queue webhook delivery %s (%s); the sweeper will send it", delivery_id, exc
        )


def _enqueue_dispatch() -> None:
    from apps.webhooks.tasks import dispatch_due

    try:
        dispatch_due.apply_async(retry=False)  # at most one waits (tasks.OneQueuedTask)
    except Exception as exc:
        logger.warning("could not queue the webhook dispatcher (%s); beat will run it", exc)


def delivery_send_due(*, delivery_id: str) -> str:
    """The `webhooks.deliver` task: send this delivery now if it is still due."""
    claim = _claim_due(now=timezone.now(), delivery_id=delivery_id)
    if claim is None:
        return "obsolete"
    delivery = _attempt(claim)
    return delivery.status if delivery is not None else "lost"


def deliveries_reclaim_expired(*, now: datetime | None = None) -> int:
    """Take over claims whose lease ran out; their attempt is recorded once, as interrupted."""
    now = now or timezone.now()
    count = 0
    while True:
        with transaction.atomic():
            delivery = (
                WebhookDelivery.objects.select_for_update(skip_locked=True)
                .filter(status=DeliveryStatus.SENDING, sending_until__lt=now)
                .order_by("sending_until", "id")
                .first()
            )
            if delivery is None:
                return count
            outcome = Outcome(
                status=AttemptStatus.ERROR,
                response_status=None,
                error_message="The attempt was interrupted before its result was recorded.",
                response_body="",
                duration_ms=None,
            )
            _record_locked(
                delivery, outcome, started_at=delivery.claimed_at or now, finished_at=now
            )
        count += 1


def deliveries_hold_inactive(*, now: datetime | None = None) -> int:
    """Pending deliveries of a paused or disabled webhook wait as `paused` until it resumes."""
    now = now or timezone.now()
    inactive = list(
        Webhook.objects.filter(
            Q(enabled=False) | Q(paused_at__isnull=False) | Q(url__isnull=True),
            deliveries__status=DeliveryStatus.PENDING,
        )
        .values_list("pk", flat=True)
        .distinct()
    )
    if not inactive:
        return 0
    # Filtered on the delivery's own columns, so a row claimed meanwhile is re-checked and left.
    return WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, webhook_id__in=inactive
    ).update(status=DeliveryStatus.PAUSED, next_attempt_at=None, updated_at=now)


# One dispatcher run stops sending after this long or this many deliveries (the next tick
# goes on): against a dead endpoint an attempt takes up to connect + read timeout.
DISPATCH_BUDGET_SECONDS = 25.0
DISPATCH_MAX_DELIVERIES = 500


def dispatch_lock_seconds() -> float:
    """How long the dispatcher's single-flight lock lasts: its budget plus one attempt's lease
    (the longest it can overrun the budget by), so it never expires under a live run."""
    return DISPATCH_BUDGET_SECONDS + _lease().total_seconds()


def deliveries_dispatch_due(
    *,
    budget_seconds: float = DISPATCH_BUDGET_SECONDS,
    max_deliveries: int = DISPATCH_MAX_DELIVERIES,
) -> dict:
    """The `webhooks.dispatch_due` sweep: reclaim, hold, then send due deliveries one by one,
    for at most `budget_seconds` and `max_deliveries` (it queues no other task).

    Each claim takes one row with SKIP LOCKED, so any number of dispatchers run side by side
    and every delivery is sent by exactly one of them; the task runs one at a time all the
    same (`apps.webhooks.tasks.dispatch_due`).
    """
    reclaimed = deliveries_reclaim_expired()
    held = deliveries_hold_inactive()
    sent = 0
    deadline = time.monotonic() + budget_seconds
    while sent < max_deliveries and time.monotonic() < deadline:
        claim = _claim_due(now=timezone.now())
        if claim is None:
            break
        _attempt(claim)
        sent += 1
    return {"reclaimed": reclaimed, "held": held, "sent": sent}
