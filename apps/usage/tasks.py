"""Celery task of usage: thin; it queues itself again while work is left."""

from celery import shared_task

from apps.usage import tiers


@shared_task(name="usage.seal_months")
def seal_months() -> str:
    """Beat, hourly (bulk queue): build the latency tier of closed months (apps.usage.tiers)."""
    result = tiers.months_seal()
    if not result.finished:
        seal_months.apply_async(retry=False)
        return "more"
    return "done"
