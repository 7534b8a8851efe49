"""Rows to the contract's objects (sections 2.7 and 2.8): plain functions, exact field sets."""

from apps.common.time import iso
from apps.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery


def webhook_to_dict(webhook: Webhook | None, *, agent) -> dict:
    """The Agent's configuration; never the secret. Unconfigured: disabled, no URL, no events."""
    if webhook is None:
        return {
            "object": "webhook",
            "agent_id": agent.pk,
            "enabled": False,
            "events": [],
            "url": None,
            "paused_at": None,
            "updated_at": iso(agent.created_at),
        }
    return {
        "object": "webhook",
        "agent_id": webhook.agent_id,
        "enabled": webhook.enabled,
        "events": list(webhook.events),
        "url": webhook.url,
        "paused_at": iso(webhook.paused_at),
        "updated_at": iso(webhook.updated_at),
    }


def attempt_to_dict(attempt: WebhookAttempt) -> dict:
    return {
        "attempt": attempt.attempt,
        "retry": attempt.retry,
        "status": attempt.status,
        "response_status": attempt.response_status,
        "error_message": attempt.error_message,
        "started_at": iso(attempt.started_at),
        "finished_at": iso(attempt.finished_at),
    }


def delivery_to_dict(delivery: WebhookDelivery) -> dict:
    return {
        "object": "webhook_delivery",
        "id": delivery.id,
        "agent_id": delivery.agent_id,
        "run_id": delivery.run_id,
        "event_type": delivery.event_type,
        "is_test": delivery.is_test,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "retry_count": delivery.retry_count,
        "response_status": delivery.response_status,
        "error_message": delivery.error_message,
        "next_attempt_at": iso(delivery.next_attempt_at),
        "attempt_history": [attempt_to_dict(a) for a in delivery.attempt_rows.all()],
        "created_at": iso(delivery.created_at),
        "updated_at": iso(delivery.updated_at),
    }


# The columns of a deliveries export: the object's fields (contract 2.8), attempts as JSON.
DELIVERY_COLUMNS = [
    "object",
    "id",
    "agent_id",
    "run_id",
    "event_type",
    "is_test",
    "status",
    "attempts",
    "retry_count",
    "response_status",
    "error_message",
    "next_attempt_at",
    "attempt_history",
    "created_at",
    "updated_at",
]


def secret_to_dict(webhook: Webhook, secret: str) -> dict:
    return {"object": "webhook_secret", "agent_id": webhook.agent_id, "secret": secret}


def health_to_dict(health, *, agent) -> dict:
    """`GET .../webhook/health` (an extension): the selector's `WebhookHealth`."""
    return {
        "object": "webhook_health",
        "agent_id": agent.pk,
        "state": health.state,
        "since": iso(health.since),
        "failing_since": iso(health.failing_since),
        "last_attempt_at": iso(health.last_attempt_at),
        "last_success_at": iso(health.last_success_at),
        "last_error": health.last_error,
        "last_error_at": iso(health.last_error_at),
        "waiting_deliveries": health.waiting,
        "failed_deliveries": health.failed,
        "counts_capped": health.counts_capped,
        "auto_paused": health.auto_paused,
    }


def recovery_to_dict(*, agent, since, recovered: int) -> dict:
    return {
        "object": "webhook_recovery",
        "agent_id": agent.pk,
        "since": iso(since),
        "recovered": recovered,
    }
