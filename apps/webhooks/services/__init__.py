"""Every change to webhooks and their deliveries happens in this package, split by concern:

- `configuration`: the webhook's URL, events, enabled and paused state, and its signing secret;
- `outbox`: recording an event as a pending delivery, in the transaction that caused it;
- `dispatch`: queueing a new delivery, and the sweeps that reclaim, hold and send due ones;
- `sending`: claiming one delivery and sending it, signed, under a lease;
- `attempts`: recording an attempt: the retry schedule, the webhook's health and its pause;
- `manual`: an owner's retry of one delivery, "retry all failed since" and test sends.

Callers import from `apps.webhooks.services`; the names below are the package's public face.
"""

from apps.webhooks.services.attempts import (
    health_record_attempt,
    pause_after_failures,
    retry_schedule,
)
from apps.webhooks.services.configuration import (
    webhook_secret_reveal,
    webhook_secret_rotate,
    webhook_update,
)
from apps.webhooks.services.dispatch import (
    deliveries_dispatch_due,
    deliveries_hold_inactive,
    deliveries_reclaim_expired,
    delivery_send_due,
    dispatch_lock_seconds,
)
from apps.webhooks.services.manual import (
    RETRYABLE,
    deliveries_recover,
    deliveries_retry,
    delivery_retry,
    delivery_send_test,
)
from apps.webhooks.services.outbox import (
    deliveries_record_for_runs,
    delivery_record_for_run,
    delivery_record_for_usage_threshold,
    delivery_record_on_runs_recorded,
    delivery_record_on_threshold_reached,
    event_body,
)

__all__ = [
    "RETRYABLE",
    "deliveries_recover",
    "deliveries_retry",
    "deliveries_dispatch_due",
    "deliveries_hold_inactive",
    "deliveries_reclaim_expired",
    "delivery_record_for_run",
    "delivery_record_for_usage_threshold",
    "deliveries_record_for_runs",
    "delivery_record_on_runs_recorded",
    "delivery_record_on_threshold_reached",
    "delivery_retry",
    "delivery_send_due",
    "delivery_send_test",
    "dispatch_lock_seconds",
    "event_body",
    "health_record_attempt",
    "pause_after_failures",
    "retry_schedule",
    "webhook_secret_reveal",
    "webhook_secret_rotate",
    "webhook_update",
]
