"""A webhook's configuration: URL, subscribed events, enabled and paused state, and its signing
secret (revealed to an owner, rotated with a grace period for the previous one)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.common.errors import BadRequest
from apps.common.netguard import BlockedURL, check_url, normalize_url
from apps.webhooks.models import (
    EVENT_TYPES,
    RUN_EVENT_TYPES,
    DeliveryStatus,
    Webhook,
    WebhookDelivery,
)
from apps.webhooks.services.audit import webhook_audit
from apps.webhooks.services.dispatch import _enqueue_dispatch
from apps.webhooks.signing import secret_generate
from apps.workspaces.audit import audit_diff

SECRET_GRACE = timedelta(hours=24)
_UNSET = object()


AUDITED_FIELDS = ("url", "events", "enabled", "paused_at")


def _snapshot(webhook: Webhook) -> dict:
    return {field: getattr(webhook, field) for field in AUDITED_FIELDS}


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


def _is_unchanged_url(raw, saved: str | None) -> bool:
    """Whether `raw` names the saved URL. An unchanged URL is not checked again: its host may
    have stopped resolving, and the owner must still be able to change events or disable."""
    if not isinstance(raw, str) or not raw.strip() or saved is None:
        return False
    try:
        return normalize_url(raw) == saved
    except BlockedURL:
        return False


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


# The delivery health the attempt recorder keeps on the row describes the endpoint it tried.
_HEALTH_FIELDS = ("failing_since", "last_error", "last_error_at", "last_attempt_at",
                  "last_success_at")  # fmt: skip


def _health_reset(webhook: Webhook) -> list[str]:
    """Forget the previous URL's health: a new endpoint starts with no failure streak (the
    page said "Failing since" the old URL's first failure after the URL changed)."""
    for name in _HEALTH_FIELDS:
        setattr(webhook, name, None)
    webhook.consecutive_failures = 0
    return [*_HEALTH_FIELDS, "consecutive_failures"]


def webhook_update(*, agent, url=_UNSET, events=_UNSET, enabled=_UNSET, paused=_UNSET) -> Webhook:
    """Change the configuration; each argument left out keeps its value.

    `url` is checked by the network guard (public http(s) only; "" or None clears it);
    enabling needs a URL. Unpausing (or enabling) resumes the deliveries that waited.
    """
    with transaction.atomic():
        webhook, _created = _webhook_for_update(agent)
        before = _snapshot(webhook)
        now = timezone.now()
        changed: list[str] = []
        if url is not _UNSET and not _is_unchanged_url(url, webhook.url):
            webhook.url = None if url in (None, "") else _validate_url(url)
            changed.append("url")
            changed += _health_reset(webhook)
        if events is not _UNSET:
            webhook.events = _validate_events(events)
            changed.append("events")
        if enabled is not _UNSET:
            webhook.enabled = bool(enabled)
            changed.append("enabled")
        if webhook.enabled and not webhook.url:
            raise BadRequest("url: Set a URL before enabling the webhook.")
        if webhook.enabled and not webhook.events:  # a row saved before events were required
            raise BadRequest("events: Subscribe to at least one event before enabling the webhook.")
        if paused is not _UNSET:
            if paused and webhook.paused_at is None:
                webhook.paused_at = now
                changed.append("paused_at")
            elif not paused and webhook.paused_at is not None:
                webhook.paused_at = None
                webhook.consecutive_failures = 0
                changed += ["paused_at", "consecutive_failures"]
        webhook.updated_at = now
        webhook.save(update_fields=[*changed, "updated_at"])
        diff = audit_diff(before, _snapshot(webhook))
        if diff:
            webhook_audit(webhook, "webhook.updated", diff)
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
        changed: list[str] = []
        if not created:  # a webhook created just now already has a fresh secret
            webhook.previous_secret = webhook.secret
            webhook.previous_secret_expires_at = now + SECRET_GRACE
            webhook.secret = secret_generate()
            changed = ["previous_secret", "previous_secret_expires_at", "secret"]
        webhook.updated_at = now
        webhook.save(update_fields=[*changed, "updated_at"])
        webhook_audit(
            webhook,
            "webhook.secret_rotated",
            {"previous_valid_until": None if created else webhook.previous_secret_expires_at},
        )
    return webhook, webhook.secret


def webhook_secret_reveal(*, agent) -> str:
    """The current secret, for an owner in the console (created on first use)."""
    with transaction.atomic():
        webhook, _created = _webhook_for_update(agent)
        webhook_audit(webhook, "webhook.secret_revealed")
    return webhook.secret
