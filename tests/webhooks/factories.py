"""Factories for webhooks: a configured webhook and deliveries in any state."""

from django.utils import timezone

from apps.webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from apps.webhooks.signing import secret_generate

ALL_EVENTS = ["run.completed", "run.failed", "run.aborted"]


def webhook_factory(*, agent, url="https://hooks.example.com/agent", **fields) -> Webhook:
    defaults = {
        "enabled": True,
        "events": list(ALL_EVENTS),
        "url": url,
        "secret": secret_generate(),
    }
    defaults.update(fields)
    return Webhook.objects.create(agent=agent, **defaults)


def delivery_factory(*, webhook, run_id=None, **fields) -> WebhookDelivery:
    now = timezone.now()
    defaults = {
        "event_type": "run.completed",
        "is_test": False,
        "body": '{"type":"run.completed","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
        "status": DeliveryStatus.PENDING,
        "next_attempt_at": now,
        "created_at": now,
        "updated_at": now,
    }
    defaults.update(fields)
    from apps.common.ids import new_id

    return WebhookDelivery.objects.create(
        webhook=webhook, agent_id=webhook.agent_id, run_id=run_id or new_id("run"), **defaults
    )
