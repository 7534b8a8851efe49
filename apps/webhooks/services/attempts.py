"""Recording an attempt: its outcome, the delivery's next status on the retry schedule, the
webhook's health and its pause after too many failed deliveries.

The caller holds the delivery's row lock (`sending._attempt`, the sweeper's takeover of an
expired claim, a manual retry).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from apps.webhooks.models import (
    AttemptStatus,
    ClaimKind,
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from apps.webhooks.services.audit import webhook_audit
from apps.workspaces.audit import SYSTEM_ACTOR

logger = logging.getLogger(__name__)


RETRY_JITTER = 0.1  # each delay is drawn from +-10 % around its nominal value


def retry_schedule() -> tuple[float, ...]:
    """Seconds before automatic retry n (1-based); after the last one fails the delivery fails."""
    return tuple(settings.WEBHOOK_RETRY_SCHEDULE)


def pause_after_failures() -> int:
    return int(settings.WEBHOOK_PAUSE_AFTER_FAILURES)


def _jittered(seconds: float) -> timedelta:
    return timedelta(seconds=seconds * random.uniform(1 - RETRY_JITTER, 1 + RETRY_JITTER))


@dataclass(frozen=True)
class Outcome:
    status: str
    response_status: int | None
    error_message: str | None
    response_body: str
    duration_ms: float | None
    response_headers: list = field(default_factory=list)


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
