"""Celery tasks of the webhooks app: thin, take ids, call one service.

Both run on the webhook queue (CELERY_WEBHOOK_QUEUE, config.celery.WEBHOOK_TASKS), whose
workers serve nothing else. What that queue can hold is bounded:

- `webhooks.deliver`: at most WEBHOOK_QUEUE_LIMIT messages (a new delivery past it is left to
  the dispatcher, `services.dispatch._enqueue_deliver`);
- `webhooks.dispatch_due`: at most one message waiting (`OneQueuedTask`): beat's ticks while
  one waits behind deliveries are dropped, not stacked, and a run in progress makes the next
  one a no-op (`dispatch_due`, single-flight).
"""

from celery import Task, shared_task

from apps.common import singleflight
from apps.webhooks import services

# A dispatch_due message waiting longer than this (lost with a flushed broker, or behind a full
# queue of deliveries to a dead endpoint) no longer keeps beat from queueing another.
QUEUED_MARK_SECONDS = 600.0


def webhook_queue() -> str:
    from celery import current_app

    return current_app.conf.webhook_queue


def webhook_queue_depth() -> int:
    """Messages waiting on the webhook queue (not those a worker has taken)."""
    from celery import current_app

    with current_app.connection_for_read() as conn:
        # Not passive: Redis drops an empty list, and a passive declare of it is an error.
        _name, waiting, _consumers = conn.default_channel.queue_declare(queue=webhook_queue())
    return int(waiting)


def dispatch_queued_mark() -> str:
    """The mark "a dispatch_due message is waiting", one per webhook queue."""
    return f"{webhook_queue()}:dispatch_due:queued"


def dispatch_running_lock() -> str:
    """The lock "a dispatch_due run is in progress", one per webhook queue."""
    return f"{webhook_queue()}:dispatch_due:running"


class OneQueuedTask(Task):
    """A periodic task of which at most one message waits on its queue: sending it while one
    waits is a no-op (returns None). The task clears the mark when it starts."""

    def apply_async(self, args=None, kwargs=None, task_id=None, producer=None, **options):
        if self.app.conf.task_always_eager:
            return super().apply_async(args, kwargs, task_id, producer, **options)
        if not singleflight.mark(dispatch_queued_mark(), ttl=QUEUED_MARK_SECONDS):
            return None
        try:
            return super().apply_async(args, kwargs, task_id, producer, **options)
        except Exception:
            singleflight.unmark(dispatch_queued_mark())
            raise


@shared_task(name="webhooks.deliver")
def deliver(delivery_id: str) -> str:
    """Send one delivery now if it is still due (queued after the run's transaction commits)."""
    return services.delivery_send_due(delivery_id=delivery_id)


@shared_task(name="webhooks.dispatch_due", base=OneQueuedTask)
def dispatch_due() -> str:
    """Beat, every 5 s: reclaim expired claims, hold paused webhooks' deliveries, send due ones.
    Single-flight: while one run is in progress, another returns "busy" at once."""
    singleflight.unmark(dispatch_queued_mark())
    with singleflight.held(
        dispatch_running_lock(), ttl=services.dispatch_lock_seconds()
    ) as acquired:
        if not acquired:
            return "busy"
        result = services.deliveries_dispatch_due()
    return "sent={sent} reclaimed={reclaimed} held={held}".format(**result)
