"""Every change to webhooks and their deliveries happens here.

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
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from http import HTTPStatus

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from apps.activity.events import RunRecorded
from apps.activity.models import Run
from apps.activity.rendering import run_to_dict
from apps.common.errors import BadRequest, Conflict, NotFound
from apps.common.http import FetchError, post_json
from apps.common.ids import new_id
from apps.common.netguard import BlockedURL, check_url
from apps.common.time import iso
from apps.webhooks.models import (
    EVENT_TYPES,
    RUN_EVENT_TYPES,
    USAGE_THRESHOLD_EVENT,
    AttemptStatus,
    ClaimKind,
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from apps.webhooks.signing import secret_generate, signed_headers

logger = logging.getLogger(__name__)

# Seconds before automatic retry n (1-based); after the last one fails the delivery is failed.
RETRY_SCHEDULE: tuple[float, ...] = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600)
RETRY_JITTER = 0.1  # each delay is drawn from +-10 % around its nominal value
PAUSE_AFTER_FAILURES = 5
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
SECRET_GRACE = timedelta(hours=24)
END_STATUSES = ("completed", "failed", "aborted")
_UNSET = object()


def retry_schedule() -> tuple[float, ...]:
    return tuple(getattr(settings, "WEBHOOK_RETRY_SCHEDULE", RETRY_SCHEDULE))


def pause_after_failures() -> int:
    return int(getattr(settings, "WEBHOOK_PAUSE_AFTER_FAILURES", PAUSE_AFTER_FAILURES))


def _timeouts() -> tuple[float, float]:
    return (
        float(getattr(settings, "WEBHOOK_CONNECT_TIMEOUT", CONNECT_TIMEOUT)),
        float(getattr(settings, "WEBHOOK_READ_TIMEOUT", READ_TIMEOUT)),
    )


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


# --- Configuration --------------------------------------------------------------------------


def _webhook_for_update(agent) -> tuple[Webhook, bool]:
    """The Agent's webhook row, locked; created (with a fresh secret) on first use."""
    try:
        with transaction.atomic():
            # A webhook first made by revealing or rotating its secret is disabled, has no URL
            # and subscribes to every event: never "active" while delivering nothing.
            _, created = Webhook.objects.get_or_create(
                agent=agent, defaults={"secret": secret_generate(), "events": list(RUN_EVENT_TYPES)}
            )
    except IntegrityError:  # created concurrently by another request
        created = False
    return Webhook.objects.select_for_update().get(agent=agent), created


def _validate_url(raw) -> str:
    if not isinstance(raw, str):
        raise BadRequest("url: Must be a string.")
    try:
        url, _addresses = check_url(raw)
    except BlockedURL as exc:
        raise BadRequest(f"url: {exc}") from None
    return url


def _validate_events(events) -> list[str]:
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise BadRequest("events: Must be an array of event names.")
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise BadRequest(
            f"events: Unknown event {unknown[0]!r}; allowed: {', '.join(EVENT_TYPES)}."
        )
    if not events:
        raise BadRequest(
            "events: Subscribe to at least one event; a webhook with none sends nothing."
        )
    return [event for event in EVENT_TYPES if event in events]


def webhook_update(*, agent, url=_UNSET, events=_UNSET, enabled=_UNSET, paused=_UNSET) -> Webhook:
    """Change the configuration; each argument left out keeps its value.

    `url` is checked by the network guard (public http(s) only; "" or None clears it);
    enabling needs a URL. Unpausing (or enabling) resumes the deliveries that waited.
    """
    with transaction.atomic():
        webhook, _created = _webhook_for_update(agent)
        now = timezone.now()
        if url is not _UNSET:
            webhook.url = None if url in (None, "") else _validate_url(url)
        if events is not _UNSET:
            webhook.events = _validate_events(events)
        if enabled is not _UNSET:
            webhook.enabled = bool(enabled)
        if webhook.enabled and not webhook.url:
            raise BadRequest("url: Set a URL before enabling the webhook.")
        if webhook.enabled and not webhook.events:  # a row saved before events were required
            raise BadRequest("events: Subscribe to at least one event before enabling the webhook.")
        if paused is not _UNSET:
            if paused and webhook.paused_at is None:
                webhook.paused_at = now
            elif not paused and webhook.paused_at is not None:
                webhook.paused_at = None
                webhook.consecutive_failures = 0
        webhook.updated_at = now
        webhook.save()
        if webhook.is_active:
            _resume_paused(webhook, now=now)
    return webhook


def _resume_paused(webhook: Webhook, *, now: datetime) -> int:
    resumed = WebhookDelivery.objects.filter(webhook=webhook, status=DeliveryStatus.PAUSED).update(
        status=DeliveryStatus.PENDING, next_attempt_at=now, updated_at=now
    )
    if resumed:
        transaction.on_commit(_enqueue_dispatch, robust=True)
    return resumed


def webhook_secret_rotate(*, agent) -> tuple[Webhook, str]:
    """A new signing secret, returned once; the previous one keeps signing for 24 hours."""
    with transaction.atomic():
        webhook, created = _webhook_for_update(agent)
        now = timezone.now()
        if not created:
            webhook.previous_secret = webhook.secret
            webhook.previous_secret_expires_at = now + SECRET_GRACE
            webhook.secret = secret_generate()
        webhook.updated_at = now
        webhook.save()
    return webhook, webhook.secret


def webhook_secret_reveal(*, agent) -> str:
    """The current secret, for an owner in the console (created on first use)."""
    with transaction.atomic():
        webhook, _created = _webhook_for_update(agent)
    return webhook.secret


def _signing_secrets(webhook: Webhook, now: datetime) -> list[str]:
    secrets = [webhook.secret]
    if (
        webhook.previous_secret
        and webhook.previous_secret_expires_at
        and webhook.previous_secret_expires_at > now
    ):
        secrets.append(webhook.previous_secret)
    return secrets


# --- Recording events (the outbox) ----------------------------------------------------------


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
        webhook=webhook, run_id=run.pk, event_type=event_type, is_test=False
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
                run_id=run.pk,
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
            webhook=webhook, run_id=run.pk, event_type=event_type, is_test=False
        ).first()
    if not held:
        transaction.on_commit(partial(_enqueue_deliver, delivery.pk), robust=True)
    return delivery


def delivery_record_for_usage_threshold(
    *, workspace_id: str, data: dict, at: datetime
) -> list[WebhookDelivery]:
    """Called (by apps.usage) inside the transaction that recorded a workspace's credits
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


def _sample_usage_threshold(*, agent, now: datetime) -> dict:
    """A test send's `usage.threshold_reached` data: the shape apps.usage sends."""
    return {
        "object": "usage_threshold",
        "workspace_id": agent.workspace_id,
        "month": now.strftime("%Y-%m"),
        "threshold_percent": 80,
        "monthly_credit_limit": 1000.0,
        "credits_used": 812.5,
        "percent_used": 81.25,
    }


def _enqueue_deliver(delivery_id: str) -> None:
    from apps.webhooks.tasks import deliver

    try:
        deliver.apply_async((delivery_id,), retry=False)
    except Exception as exc:  # broker down: the dispatch_due sweep finds the row, nothing is lost
        logger.warning(
            "could not queue webhook delivery %s (%s); the sweeper will send it", delivery_id, exc
        )


def _enqueue_dispatch() -> None:
    from apps.webhooks.tasks import dispatch_due

    try:
        dispatch_due.apply_async(retry=False)
    except Exception as exc:
        logger.warning("could not queue the webhook dispatcher (%s); beat will run it", exc)


# --- Sending --------------------------------------------------------------------------------


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
        duration_ms=outcome.duration_ms,
        started_at=started_at,
        finished_at=finished_at,
    )
    delivery.attempts = number
    delivery.response_status = outcome.response_status
    delivery.error_message = outcome.error_message
    webhook_fields = _next_state(
        delivery, webhook, ok=outcome.status == AttemptStatus.SUCCEEDED, kind=kind, now=finished_at
    )
    delivery.claim_token = None
    delivery.claim_kind = None
    delivery.claimed_at = None
    delivery.sending_until = None
    delivery.prior_status = None
    delivery.updated_at = finished_at
    delivery.save()
    if webhook_fields:
        webhook.save(update_fields=webhook_fields)


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


def deliveries_dispatch_due(*, budget_seconds: float = 25.0, max_deliveries: int = 500) -> dict:
    """The `webhooks.dispatch_due` sweep: reclaim, hold, then send due deliveries one by one.

    Each claim takes one row with SKIP LOCKED, so any number of dispatchers run side by side
    and every delivery is sent by exactly one of them.
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
    _attempt(claim)
    from apps.webhooks.selectors import delivery_get

    return delivery_get(agent=agent, delivery_id=delivery_id)


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
        data, run_id = _sample_usage_threshold(agent=agent, now=now), None
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
    _attempt(claim)
    from apps.webhooks.selectors import delivery_get

    return delivery_get(agent=agent, delivery_id=delivery.pk)
