"""Sending deliveries: claims, leases, attempts, the retry schedule and the sweeps.

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
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http import HTTPStatus

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from apps.common.http import FetchError, post_json
from apps.webhooks.models import (
    AttemptStatus,
    ClaimKind,
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from apps.webhooks.services.audit import webhook_audit
from apps.webhooks.signing import signed_headers
from apps.workspaces.audit import SYSTEM_ACTOR

logger = logging.getLogger(__name__)

RETRY_JITTER = 0.1  # each delay is drawn from +-10 % around its nominal value


def retry_schedule() -> tuple[float, ...]:
    """Seconds before automatic retry n (1-based); after the last one fails the delivery fails."""
    return tuple(settings.WEBHOOK_RETRY_SCHEDULE)


def pause_after_failures() -> int:
    return int(settings.WEBHOOK_PAUSE_AFTER_FAILURES)


def _timeouts() -> tuple[float, float]:
    return float(settings.WEBHOOK_CONNECT_TIMEOUT), float(settings.WEBHOOK_READ_TIMEOUT)


# Beyond the attempt's own deadline: name resolution, signing and recording the attempt.
LEASE_MARGIN_SECONDS = 10


def _lease() -> timedelta:
    # Longer than the longest attempt can take (post_json stops at connect + read timeout), so a
    # live dispatcher never loses its claim; short, so a killed one's delivery is sent again
    # within a minute (lease + one dispatch interval + the first retry delay).
    connect, read = _timeouts()
    return timedelta(seconds=connect + read + LEASE_MARGIN_SECONDS)


def _jittered(seconds: float) -> timedelta:
    return timedelta(seconds=seconds * random.uniform(1 - RETRY_JITTER, 1 + RETRY_JITTER))


# --- Sending --------------------------------------------------------------------------------


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


def _signing_secrets(webhook: Webhook, now: datetime) -> list[str]:
    secrets = [webhook.secret]
    if (
        webhook.previous_secret
        and webhook.previous_secret_expires_at
        and webhook.previous_secret_expires_at > now
    ):
        secrets.append(webhook.previous_secret)
    return secrets


@dataclass(frozen=True)
class Claim:
    delivery_id: str
    token: str


@dataclass(frozen=True)
class Outcome:
    status: str
    response_status: int | None
    error_message: str | None
    response_body: str
    duration_ms: float | None
    response_headers: list = field(default_factory=list)


def _mark_sending(delivery: WebhookDelivery, *, kind: str, now: datetime) -> Claim:
    token = uuid.uuid4().hex
    delivery.prior_status = delivery.status
    delivery.status = DeliveryStatus.SENDING
    delivery.claim_token = token
    delivery.claim_kind = kind
    delivery.claimed_at = now
    delivery.sending_until = now + _lease()
    delivery.updated_at = now
    delivery.save(
        update_fields=[
            "prior_status",
            "status",
            "claim_token",
            "claim_kind",
            "claimed_at",
            "sending_until",
            "updated_at",
        ]
    )
    return Claim(delivery_id=delivery.pk, token=token)


def _due(now: datetime):
    return WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING,
        next_attempt_at__lte=now,
        webhook__enabled=True,
        webhook__paused_at__isnull=True,
        webhook__url__isnull=False,
        # An archived Agent's deliveries wait, still pending and due; restoring it sends them.
        agent__status="active",
    )


def _claim_due(*, now: datetime, delivery_id: str | None = None) -> Claim | None:
    with transaction.atomic():
        queryset = _due(now)
        if delivery_id is not None:
            queryset = queryset.filter(pk=delivery_id)
        delivery = (
            queryset.select_for_update(skip_locked=True, of=("self",))
            .order_by("next_attempt_at", "id")
            .first()
        )
        if delivery is None:
            return None
        return _mark_sending(delivery, kind=ClaimKind.AUTO, now=now)


def _is_timeout(exc: BaseException) -> bool:
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, NewConnectionError):  # urllib3 files it under ConnectTimeoutError
            return False
        if isinstance(cause, Urllib3Timeout | TimeoutError):
            return True
        cause = cause.__cause__
    return False


def _status_text(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _post(delivery: WebhookDelivery, webhook: Webhook, *, now: datetime) -> Outcome:
    body = delivery.body.encode()
    headers = signed_headers(
        secrets_in_use=_signing_secrets(webhook, now),
        msg_id=delivery.pk,
        timestamp=int(now.timestamp()),
        body=body,
    )
    connect_timeout, read_timeout = _timeouts()
    started = time.monotonic()
    try:
        if not webhook.url:
            raise FetchError("The webhook has no URL.")
        result = post_json(
            webhook.url,
            body=body,
            headers=headers,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )
    except FetchError as exc:
        return Outcome(
            status=AttemptStatus.TIMEOUT if _is_timeout(exc) else AttemptStatus.ERROR,
            response_status=None,
            error_message=str(exc)[:500],
            response_body="",
            duration_ms=(time.monotonic() - started) * 1000,
        )
    except Exception:
        logger.exception("unexpected error while sending webhook delivery %s", delivery.pk)
        return Outcome(
            status=AttemptStatus.ERROR,
            response_status=None,
            error_message="The attempt failed with an internal error.",
            response_body="",
            duration_ms=(time.monotonic() - started) * 1000,
        )
    ok = 200 <= result.status < 300
    return Outcome(
        status=AttemptStatus.SUCCEEDED if ok else AttemptStatus.FAILED,
        response_status=result.status,
        error_message=None if ok else f"The endpoint answered {_status_text(result.status)}.",
        response_body=result.body_excerpt,
        duration_ms=result.duration_ms,
        response_headers=[list(pair) for pair in result.headers],
    )


def _attempt(claim: Claim) -> WebhookDelivery | None:
    """Send a claimed delivery (no transaction or lock held) and record the attempt."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=claim.delivery_id)
    started_at = timezone.now()
    outcome = _post(delivery, delivery.webhook, now=started_at)
    finished_at = timezone.now()
    with transaction.atomic():
        still_claimed = (
            WebhookDelivery.objects.select_for_update()
            .filter(pk=claim.delivery_id, status=DeliveryStatus.SENDING, claim_token=claim.token)
            .first()
        )
        if still_claimed is None:
            # The lease ran out and the sweeper already recorded this attempt as interrupted.
            logger.warning("webhook delivery %s: claim lost before recording", claim.delivery_id)
            return None
        _record_locked(still_claimed, outcome, started_at=started_at, finished_at=finished_at)
    return still_claimed


def _record_locked(
    delivery: WebhookDelivery, outcome: Outcome, *, started_at: datetime, finished_at: datetime
) -> None:
    """Append the attempt and move the delivery on; the caller holds the delivery's row lock."""
    webhook = Webhook.objects.select_for_update().get(pk=delivery.webhook_id)
    kind = delivery.claim_kind or ClaimKind.AUTO
    number = delivery.attempts + 1
    WebhookAttempt.objects.create(
        delivery=delivery,
        attempt=number,
        retry=delivery.retry_count,
        kind=kind,
        status=outcome.status,
        response_status=outcome.response_status,
        error_message=outcome.error_message,
        response_body=outcome.response_body,
        response_headers=outcome.response_headers,
        duration_ms=outcome.duration_ms,
        started_at=started_at,
        finished_at=finished_at,
    )
    delivery.attempts = number
    delivery.response_status = outcome.response_status
    delivery.error_message = outcome.error_message
    retry_count_before = delivery.retry_count
    webhook_fields = _next_state(
        delivery, webhook, ok=outcome.status == AttemptStatus.SUCCEEDED, kind=kind, now=finished_at
    )
    delivery.claim_token = None
    delivery.claim_kind = None
    delivery.claimed_at = None
    delivery.sending_until = None
    delivery.prior_status = None
    delivery.updated_at = finished_at
    delivery_fields = [
        "attempts",
        "response_status",
        "error_message",
        "status",
        "next_attempt_at",
        "claim_token",
        "claim_kind",
        "claimed_at",
        "sending_until",
        "prior_status",
        "updated_at",
    ]
    if delivery.retry_count != retry_count_before:  # only an automatic retry moves the schedule
        delivery_fields.append("retry_count")
    delivery.save(update_fields=delivery_fields)
    webhook_fields += health_record_attempt(
        webhook, status=outcome.status, error=outcome.error_message, at=finished_at
    )
    webhook.save(update_fields=webhook_fields)


def health_record_attempt(
    webhook: Webhook, *, status: str, error: str | None, at: datetime
) -> list[str]:
    """Move the webhook's delivery health by one recorded attempt (the caller saves the
    webhook); returns the fields set.

    Every attempt counts, test sends and manual retries too: each is the endpoint answering
    (or not) now, which is what the owner asks the health badge about.
    """
    webhook.last_attempt_at = at
    if status == AttemptStatus.SUCCEEDED:
        webhook.last_success_at = at
        webhook.failing_since = None
        return ["last_attempt_at", "last_success_at", "failing_since"]
    if webhook.failing_since is None:
        webhook.failing_since = at
    webhook.last_error = error
    webhook.last_error_at = at
    return ["last_attempt_at", "failing_since", "last_error", "last_error_at"]


def _next_state(
    delivery: WebhookDelivery, webhook: Webhook, *, ok: bool, kind: str, now: datetime
) -> list[str]:
    """Set the delivery's next status; returns the webhook fields that changed."""
    if ok:
        delivery.status = DeliveryStatus.SUCCEEDED
        delivery.next_attempt_at = None
        if webhook.consecutive_failures:
            webhook.consecutive_failures = 0
            return ["consecutive_failures"]
        return []
    if kind == ClaimKind.MANUAL or delivery.is_test:
        # A manual retry or a test send does not move the automatic schedule.
        prior = delivery.prior_status
        if prior == DeliveryStatus.PENDING and delivery.next_attempt_at is not None:
            delivery.status = DeliveryStatus.PENDING
        elif prior == DeliveryStatus.PAUSED:
            delivery.status = DeliveryStatus.PAUSED
            delivery.next_attempt_at = None
        else:
            delivery.status = DeliveryStatus.FAILED
            delivery.next_attempt_at = None
        return []
    schedule = retry_schedule()
    if delivery.retry_count < len(schedule):
        delivery.next_attempt_at = now + _jittered(schedule[delivery.retry_count])
        delivery.retry_count += 1
        delivery.status = DeliveryStatus.PENDING
        if not webhook.is_active:
            delivery.status = DeliveryStatus.PAUSED
            delivery.next_attempt_at = None
        return []
    delivery.status = DeliveryStatus.FAILED
    delivery.next_attempt_at = None
    webhook.consecutive_failures += 1
    fields = ["consecutive_failures"]
    if webhook.paused_at is None and webhook.consecutive_failures >= pause_after_failures():
        webhook.paused_at = now
        fields.append("paused_at")
        # The service pauses it, whoever's send failed last (a manual retry included).
        webhook_audit(
            webhook,
            "webhook.paused",
            {
                "paused_at": {"from": None, "to": now},
                "consecutive_failures": webhook.consecutive_failures,
            },
            actor=SYSTEM_ACTOR,
        )
        logger.warning(
            "webhook %s paused after %s failed deliveries", webhook.pk, webhook.consecutive_failures
        )
    return fields


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
