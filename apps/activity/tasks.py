"""Celery tasks of activity: thin, each calls one service."""

from celery import shared_task

from apps.activity.pending_spans import pending_spans_expire


@shared_task(name="activity.expire_pending_spans")
def expire_pending_spans() -> str:
    # One bounded batch per beat tick; a backlog drains over the next ticks.
    result = pending_spans_expire()
    return f"recorded {result.recorded}, dropped {result.dropped}"
