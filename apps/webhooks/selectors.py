"""Reads of webhook configuration and deliveries, always through the Agent that owns them."""

from django.db.models import Prefetch, QuerySet

from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset
from apps.webhooks.models import (
    EVENT_TYPES,
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)

# GET .../webhook/deliveries: newest first, ties broken by id.
DELIVERY_KEYSET = Keyset("webhook-deliveries", "created_at", descending=True)


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
