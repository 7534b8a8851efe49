"""Celery task of retention: thin; it queues itself again while work is left."""

from celery import shared_task

from apps.retention import services


@shared_task(name="retention.apply")
def apply() -> str:
    """Beat, hourly (bulk queue): delete expired activity and superseded knowledge versions."""
    result = services.retention_apply()
    if not result.finished:
        apply.apply_async(retry=False)
        return "more"
    return "done"
