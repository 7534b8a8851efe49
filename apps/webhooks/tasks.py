"""Celery tasks of the webhooks app: thin, take ids, call one service."""

from celery import shared_task

from apps.webhooks import services


@shared_task(name="webhooks.deliver")
def deliver(delivery_id: str) -> str:
    """Send one delivery now if it is still due (queued after the run's transaction commits)."""
    return services.delivery_send_due(delivery_id=delivery_id)


@shared_task(name="webhooks.dispatch_due")
def dispatch_due() -> str:
    """Beat, every 5 s: reclaim expired claims, hold paused webhooks' deliveries, send due ones."""
    result = services.deliveries_dispatch_due()
    return "sent={sent} reclaimed={reclaimed} held={held}".format(**result)
