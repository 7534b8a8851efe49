"""Sending one delivery: its claim and lease, the signed POST with connect and read timeouts,
and the attempt recorded only while the claim is still its own."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from http import HTTPStatus

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from apps.common.http import FetchError, post_json
from apps.webhooks.models import AttemptStatus, ClaimKind, DeliveryStatus, Webhook, WebhookDelivery
from apps.webhooks.services.attempts import Outcome, _record_locked
from apps.webhooks.signing import signed_headers

logger = logging.getLogger(__name__)


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
