"""Demo webhook for `seed_demo`: a configured endpoint and deliveries in every state, so a
newcomer sees the Webhooks page alive (succeeded, failed after its retries, retrying later)."""

import random
from datetime import datetime, timedelta

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
from apps.webhooks.services import event_body, health_record_attempt
from apps.webhooks.signing import secret_generate
from apps.workspaces.models import Agent

DEMO_URL = "https://hooks.example.com/agent-console"
DEMO_DELIVERIES = 60
DEMO_OLD_DELIVERIES = 12
# The default WEBHOOK_RETRY_SCHEDULE, fixed here so the demo's history has the same shape on
# every install, whatever schedule (possibly empty) this one is configured with.
DEMO_RETRY_SCHEDULE: tuple[float, ...] = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600)
DEMO_READ_TIMEOUT_MS = 10_000


def _attempt(delivery, number: int, *, ok: bool, at, rng: random.Random) -> WebhookAttempt:
    # Each failure looks as a real one would: a 503 answers quickly, a timeout waits the whole
    # read timeout (10 s by default) before it gives up.
    if ok:
        status, code, error, duration = AttemptStatus.SUCCEEDED, 200, None, rng.uniform(80, 900)
    elif rng.random() < 0.5:
        status, code, duration = AttemptStatus.FAILED, 503, rng.uniform(40, 400)
        error = "The endpoint answered 503 Service Unavailable."
    else:
        status, code, error = AttemptStatus.TIMEOUT, None, "No answer within 10 s."
        duration = DEMO_READ_TIMEOUT_MS + rng.uniform(1, 40)
    return WebhookAttempt(
        delivery=delivery,
        attempt=number,
        retry=number - 1,
        kind=ClaimKind.AUTO,
        status=status,
        response_status=code,
        error_message=error,
        response_body="ok" if ok else "",
        response_headers=(
            [["Content-Type", "text/plain"], ["Content-Length", "2"]]
            if ok
            else [["Content-Type", "text/html"], ["Retry-After", "30"]]
            if code
            else []
        ),
        duration_ms=duration,
        started_at=at,
        finished_at=at + timedelta(milliseconds=duration),
    )


def _schedule_walk(
    delivery, *, failures: int, succeeds: bool, at, now, rng: random.Random
) -> tuple[list[WebhookAttempt], datetime | None]:
    """Up to `failures` failed attempts spaced by the retry schedule, then one success if
    `succeeds`; attempts whose time has not come yet are not made. Returns the attempts and
    when the next one is due (None when the walk ended)."""
    attempts: list[WebhookAttempt] = []
    for number in range(1, failures + 1 + int(succeeds)):
        if at > now - timedelta(seconds=11):  # not yet, or still in flight: due then
            return attempts, at
        ok = succeeds and number == failures + 1
        attempts.append(_attempt(delivery, number, ok=ok, at=at, rng=rng))
        at += timedelta(seconds=DEMO_RETRY_SCHEDULE[min(number, len(DEMO_RETRY_SCHEDULE)) - 1])
    return attempts, None if (succeeds or failures > len(DEMO_RETRY_SCHEDULE)) else at


def webhook_seed_demo(*, agent: Agent) -> str | None:
    """Configure the demo endpoint and record deliveries for recent ended runs, once."""
    if Webhook.objects.filter(agent=agent).exists():
        return None
    rng = random.Random(f"demo-webhooks-{agent.pk}")
    now = timezone.now()
    recent, old = _demo_runs(agent, now=now)
    runs = recent + old
    # The newest few that could have been tried by now keep failing, and every delivery that
    # succeeds finished before the third of those was first tried: the badge reads "failing"
    # whatever the demo's run times (a run that ended seconds ago has no attempt yet).
    sent = {run.pk: run.completed_at or run.updated_at for run in runs}
    triable = sorted(
        (run for run in recent if sent[run.pk] <= now - timedelta(seconds=11)),
        key=lambda run: sent[run.pk],
        reverse=True,
    )
    failing = {run.pk for run in triable[:3]}
    quiet_before = min((sent[pk] for pk in failing), default=now) - timedelta(seconds=60)
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
            sent_at = sent[run.pk]
            # Every attempt is in the past: one whose time has not come is the next one due.
            if run.pk in failing:  # the newest few keep failing and wait for their next retry
                failures, succeeds = 3, False
            elif index >= len(recent) and index % 3 == 0:  # some old ones gave up
                failures, succeeds = len(DEMO_RETRY_SCHEDULE) + 1, False
            else:  # most succeed at once, some on a retry
                failures = 1 if rng.random() < 0.15 and sent_at < quiet_before else 0
                succeeds = True
            delivery, tried = _delivery(
                webhook,
                run,
                sent_at=sent_at,
                failures=failures,
                succeeds=succeeds,
                now=now,
                rng=rng,
            )
            deliveries.append(delivery)
            attempts.extend(tried)
        WebhookDelivery.objects.bulk_create(deliveries)
        WebhookAttempt.objects.bulk_create(attempts)
        # The health badge as the dispatcher would have left it, attempt after attempt.
        for attempt in sorted(attempts, key=lambda a: a.finished_at):
            health_record_attempt(
                webhook, status=attempt.status, error=attempt.error_message, at=attempt.finished_at
            )
        webhook.save()
    return f"webhook to {DEMO_URL} with {len(deliveries)} deliveries"


def _demo_runs(agent: Agent, *, now: datetime) -> tuple[list[Run], list[Run]]:
    """The recent ended runs, and a few from before the whole retry schedule could run out, so
    some of them can truly have given up by now (a delivery gives up about 18 hours after its
    event)."""
    ended = Run.objects.filter(agent=agent, status__in=END_STATES).order_by("-created_at")
    recent = list(ended[: DEMO_DELIVERIES - DEMO_OLD_DELIVERIES])
    gave_up_before = now - timedelta(seconds=sum(DEMO_RETRY_SCHEDULE) + 3600)
    old = list(
        ended.filter(created_at__lt=gave_up_before).exclude(pk__in=[run.pk for run in recent])[
            :DEMO_OLD_DELIVERIES
        ]
    )
    return recent, old


def _delivery(
    webhook: Webhook,
    run: Run,
    *,
    sent_at: datetime,
    failures: int,
    succeeds: bool,
    now: datetime,
    rng: random.Random,
) -> tuple[WebhookDelivery, list[WebhookAttempt]]:
    """The delivery of `run`'s event and its attempts, walked along the retry schedule, in the
    state the dispatcher would have left them."""
    delivery = WebhookDelivery(
        webhook=webhook,
        agent=webhook.agent,
        run_id=run.id,
        event_type=f"run.{run.status}",
        body=event_body(event_type=f"run.{run.status}", at=sent_at, data=run_to_dict(run)),
        created_at=sent_at,
    )
    tried, due = _schedule_walk(
        delivery, failures=failures, succeeds=succeeds, at=sent_at, now=now, rng=rng
    )
    if due is not None:
        # Failed so far, and the schedule goes on: pending, due at the next step (a
        # walk of three failures waits for its fourth attempt the same way).
        delivery.status = DeliveryStatus.PENDING
        delivery.next_attempt_at = max(due, now + timedelta(seconds=DEMO_RETRY_SCHEDULE[2]))
    elif tried[-1].status == AttemptStatus.SUCCEEDED:  # a walk ends with an attempt
        delivery.status = DeliveryStatus.SUCCEEDED
    else:
        delivery.status = DeliveryStatus.FAILED
    delivery.attempts = len(tried)
    # As the dispatcher counts: one scheduled retry per failure the schedule covered.
    failed = sum(attempt.status != AttemptStatus.SUCCEEDED for attempt in tried)
    delivery.retry_count = min(failed, len(DEMO_RETRY_SCHEDULE))
    if tried:  # (a run that ended seconds ago has no attempt yet)
        delivery.response_status = tried[-1].response_status
        delivery.error_message = tried[-1].error_message
    delivery.updated_at = tried[-1].finished_at if tried else sent_at
    return delivery, tried
