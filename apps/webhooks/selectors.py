"""Reads of webhook configuration and deliveries, always through the Agent that owns them."""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Prefetch, QuerySet

from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset
from apps.common.sorting import ListSorts, SortColumn
from apps.webhooks.models import (
    EVENT_TYPES,
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)

# GET .../webhook/deliveries: newest first, ties broken by id.
DELIVERY_KEYSET = Keyset("webhook-deliveries", "created_at", descending=True)

# The deliveries table's orders: newest first (the API's), by status, or by attempts (the most
# tried first). Indexes in WebhookDelivery.Meta.
DELIVERY_SORTS = ListSorts(
    DELIVERY_KEYSET,
    (
        SortColumn("created", "Created", "created_at", "time"),
        SortColumn("status", "Status", "status", "text", "asc"),
        SortColumn("attempts", "Attempts", "attempts", "number", css="num"),
    ),
)


def webhook_get(*, agent) -> Webhook | None:
    return Webhook.objects.filter(agent=agent).first()


def _with_attempts(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(
        Prefetch("attempt_rows", queryset=WebhookAttempt.objects.order_by("attempt"))
    )


def delivery_list(
    *, agent, status: str | None = None, event_type: str | None = None
) -> QuerySet[WebhookDelivery]:
    """An Agent's deliveries, optionally filtered; the caller orders and pages them."""
    queryset = WebhookDelivery.objects.filter(agent=agent)
    if status:
        if status not in DeliveryStatus.values:
            raise BadRequest(f"status must be one of {', '.join(DeliveryStatus.values)}.")
        queryset = queryset.filter(status=status)
    if event_type:
        if event_type not in EVENT_TYPES:
            raise BadRequest(f"event_type must be one of {', '.join(EVENT_TYPES)}.")
        queryset = queryset.filter(event_type=event_type)
    return _with_attempts(queryset)


def delivery_get(*, agent, delivery_id: str) -> WebhookDelivery:
    delivery = _with_attempts(WebhookDelivery.objects.filter(agent=agent, pk=delivery_id)).first()
    if delivery is None:
        raise NotFound("No such webhook delivery for this Agent.")
    return delivery


# Counting waiting or failed deliveries stops here: a range of the (agent, status) index is
# read at most this far, so the badge stays fast however many deliveries pile up.
HEALTH_COUNT_CAP = 10_000


class HealthState:
    NOT_CONFIGURED = "not_configured"  # no URL: nothing is recorded or sent
    DISABLED = "disabled"  # the owner turned sending off: no new deliveries are recorded
    NO_EVENTS = "no_events"  # enabled but subscribed to nothing
    PAUSED = "paused"  # by the owner, or automatically after deliveries kept failing
    FAILING = "failing"  # the latest attempt failed, and every one since `since`
    HEALTHY = "healthy"  # the latest attempt succeeded, or none was made yet


@dataclass(frozen=True)
class WebhookHealth:
    """What the webhook is doing, for the console's badge and `GET .../webhook/health`."""

    state: str
    # When the state began: paused_at while paused, the first failure of the streak while
    # failing (also kept while paused, when the pause came from failures).
    since: datetime | None
    failing_since: datetime | None
    last_attempt_at: datetime | None
    last_success_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    waiting: int  # deliveries pending or held while paused
    failed: int  # deliveries that gave up (retry them with "retry all failed since")
    counts_capped: bool
    auto_paused: bool  # the pause came from WEBHOOK_PAUSE_AFTER_FAILURES, not from an owner

    @property
    def label(self) -> str:
        return {
            HealthState.NOT_CONFIGURED: "Not configured",
            HealthState.DISABLED: "Disabled",
            HealthState.NO_EVENTS: "No events selected",
            HealthState.PAUSED: "Paused",
            HealthState.FAILING: "Failing",
            HealthState.HEALTHY: "Healthy",
        }[self.state]


def _bounded(queryset: QuerySet) -> tuple[int, bool]:
    value = queryset.order_by()[: HEALTH_COUNT_CAP + 1].count()
    return min(value, HEALTH_COUNT_CAP), value > HEALTH_COUNT_CAP


def webhook_health(*, agent, webhook: Webhook | None = None) -> WebhookHealth:
    """The one computation of a webhook's health, read by the page and the API alike.

    The state comes from the configuration (URL, enabled, events, paused) and then from the
    attempts, as the attempt recorder keeps them on the webhook row (`failing_since`, ...);
    the counts from the deliveries' (agent, status) index.
    """
    if webhook is None:
        webhook = webhook_get(agent=agent)
    if webhook is None:
        return WebhookHealth(
            state=HealthState.NOT_CONFIGURED,
            since=None,
            failing_since=None,
            last_attempt_at=None,
            last_success_at=None,
            last_error=None,
            last_error_at=None,
            waiting=0,
            failed=0,
            counts_capped=False,
            auto_paused=False,
        )
    deliveries = WebhookDelivery.objects.filter(agent=agent)
    waiting, waiting_capped = _bounded(
        deliveries.filter(status__in=[DeliveryStatus.PENDING, DeliveryStatus.PAUSED])
    )
    failed, failed_capped = _bounded(deliveries.filter(status=DeliveryStatus.FAILED))
    since = None
    if not webhook.url:
        state = HealthState.NOT_CONFIGURED
    elif not webhook.enabled:
        state = HealthState.DISABLED
    elif not webhook.events:
        state = HealthState.NO_EVENTS
    elif webhook.paused_at is not None:
        state, since = HealthState.PAUSED, webhook.paused_at
    elif webhook.failing_since is not None:
        state, since = HealthState.FAILING, webhook.failing_since
    else:
        state = HealthState.HEALTHY
    return WebhookHealth(
        state=state,
        since=since,
        failing_since=webhook.failing_since,
        last_attempt_at=webhook.last_attempt_at,
        last_success_at=webhook.last_success_at,
        last_error=webhook.last_error,
        last_error_at=webhook.last_error_at,
        waiting=waiting,
        failed=failed,
        counts_capped=waiting_capped or failed_capped,
        auto_paused=bool(
            webhook.paused_at is not None
            and webhook.consecutive_failures >= int(settings.WEBHOOK_PAUSE_AFTER_FAILURES)
        ),
    )


def delivery_recoverable(*, agent, since: datetime) -> QuerySet[WebhookDelivery]:
    """The deliveries "retry all failed since" sends again: failed, not test sends, created at
    or after `since` (Svix's "recover")."""
    return WebhookDelivery.objects.filter(
        agent=agent, status=DeliveryStatus.FAILED, is_test=False, created_at__gte=since
    )
