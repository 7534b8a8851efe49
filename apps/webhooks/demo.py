"""Demo webhook for `seed_demo`: a configured endpoint and deliveries in every state, so a
newcomer sees the Webhooks page alive (succeeded, failed after its retries, retrying later)."""

import random
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.activity.models import END_STATES, Run
from apps.activity.rendering import run_to_dict
from apps.webhooks.models import (
    RUN_EVENT_TYPES,
    AttemptStatus,
    ClaimKind,
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from apps.webhooks.services import event_body
from apps.webhooks.signing import secret_generate
from apps.workspaces.models import Agent

DEMO_URL = "https://hooks.example.com/agent-console"
DEMO_DELIVERIES = 60
# The default WEBHOOK_RETRY_SCHEDULE, fixed here so the demo's history has the same shape on
# every install, whatever schedule (possibly empty) this one is configured with.
DEMO_RETRY_SCHEDULE: tuple[float, ...] = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600)


def _attempt(delivery, number: int, *, ok: bool, at, rng: random.Random) -> WebhookAttempt:
    duration = rng.uniform(80, 900)
    if ok:
        status, code, error = AttemptStatus.SUCCEEDED, 200, None
    elif rng.random() < 0.5:
        status, code, error = AttemptStatus.FAILED, 503, "The endpoint answered 503."
    else:
        status, code, error = AttemptStatus.TIMEOUT, None, "No answer within 10 s."
    return WebhookAttempt(
        delivery=delivery,
        attempt=number,
        retry=number - 1,
        kind=ClaimKind.AUTO,
        status=status,
        response_status=code,
        error_message=error,
        response_body="ok" if ok else "",
        duration_ms=duration,
        started_at=at,
        finished_at=at + timedelta(milliseconds=duration),
    )


def _schedule_walk(
    delivery, *, failures: int, succeeds: bool, at, rng: random.Random
) -> list[WebhookAttempt]:
    """`failures` failed attempts spaced by the retry schedule, then one success if `succeeds`."""
    attempts = []
    for number in range(1, failures + 1 + int(succeeds)):
        ok = succeeds and number == failures + 1
        attempts.append(_attempt(delivery, number, ok=ok, at=at, rng=rng))
        at += timedelta(seconds=DEMO_RETRY_SCHEDULE[min(number, len(DEMO_RETRY_SCHEDULE)) - 1])
    return attempts


def webhook_seed_demo(*, agent: Agent) -> str | None:
    """Configure the demo endpoint and record deliveries for recent ended runs, once."""
    if Webhook.objects.filter(agent=agent).exists():
        return None
    rng = random.Random(f"demo-webhooks-{agent.pk}")
    now = timezone.now()
    runs = list(
        Run.objects.filter(agent=agent, status__in=END_STATES).order_by("-created_at")[
            :DEMO_DELIVERIES
        ]
    )
    with transaction.atomic():
        webhook = Webhook.objects.create(
            agent=agent,
            url=DEMO_URL,
            events=list(RUN_EVENT_TYPES),
            enabled=True,
            secret=secret_generate(),
        )
        deliveries, attempts = [], []
        for index, run in enumerate(runs):
            sent_at = run.completed_at or run.updated_at
            delivery = WebhookDelivery(
                webhook=webhook,
                agent=agent,
                run_id=run.id,
                event_type=f"run.{run.status}",
                body=event_body(event_type=f"run.{run.status}", at=sent_at, data=run_to_dict(run)),
                created_at=sent_at,
            )
            if index < 3:  # the newest few failed three times and wait for their next retry
                tried = _schedule_walk(delivery, failures=3, succeeds=False, at=sent_at, rng=rng)
                delivery.status = DeliveryStatus.PENDING
                delivery.next_attempt_at = max(now, tried[-1].finished_at) + timedelta(
                    seconds=DEMO_RETRY_SCHEDULE[2]
                )
            elif index % 12 == 7:  # one in twelve gave up after the whole schedule
                failures = len(DEMO_RETRY_SCHEDULE) + 1
                tried = _schedule_walk(
                    delivery, failures=failures, succeeds=False, at=sent_at, rng=rng
                )
                delivery.status = DeliveryStatus.FAILED
            else:  # most succeed at once, some on a retry
                failures = 1 if rng.random() < 0.15 else 0
                tried = _schedule_walk(
                    delivery, failures=failures, succeeds=True, at=sent_at, rng=rng
                )
                delivery.status = DeliveryStatus.SUCCEEDED
            last = tried[-1]
            delivery.attempts = len(tried)
            # As the dispatcher counts: one scheduled retry per failure the schedule covered.
            failed = sum(attempt.status != AttemptStatus.SUCCEEDED for attempt in tried)
            delivery.retry_count = min(failed, len(DEMO_RETRY_SCHEDULE))
            delivery.response_status = last.response_status
            delivery.error_message = last.error_message
            delivery.updated_at = last.finished_at
            deliveries.append(delivery)
            attempts.extend(tried)
        WebhookDelivery.objects.bulk_create(deliveries)
        WebhookAttempt.objects.bulk_create(attempts)
    return f"webhook to {DEMO_URL} with {len(deliveries)} deliveries"
