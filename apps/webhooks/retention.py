"""Deleting webhook deliveries for the retention policy (apps.retention), in bounded batches.

A delivery's body is a copy of its run, so it is kept as long as its run and never longer than
the workspace keeps activity: once it is older than the cut-off and its run is gone (the run's
conversation expired, apps.activity.retention), it goes with its attempts. Deliveries that carry
no recorded run (`usage.threshold_reached`, test sends) go by age alone. One in flight
(`sending`) waits for the next pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef

from apps.activity.events import EndUserDataDeleted
from apps.activity.models import Run
from apps.webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery


@dataclass
class DeliveriesPurged:
    deliveries: int = 0
    # Where the next batch of the same pass starts: what lies before it is gone or kept.
    resume_at: datetime | None = None

    def __bool__(self) -> bool:
        return bool(self.deliveries)


def deliveries_purge_batch(
    *,
    agent_id: str,
    before: datetime,
    batch_size: int = 500,
    resume_at: datetime | None = None,
) -> DeliveriesPurged:
    """Delete up to `batch_size` of the Agent's expired deliveries, oldest first, with their
    attempts, in one transaction of three statements. `resume_at` is the previous batch's (None
    for the first); an empty result (false) means nothing is left to delete."""
    run_kept = Exists(Run.objects.filter(agent_id=OuterRef("agent_id"), id=OuterRef("run_id")))
    expired = WebhookDelivery.objects.filter(agent_id=agent_id, created_at__lt=before)
    if resume_at is not None:
        expired = expired.filter(created_at__gte=resume_at)
    with transaction.atomic():
        picked = list(
            expired.exclude(status=DeliveryStatus.SENDING)
            .exclude(run_kept)
            .order_by("created_at", "id")
            .select_for_update(skip_locked=True)
            .values_list("id", "created_at")[:batch_size]
        )
        if not picked:
            return DeliveriesPurged()
        ids = [delivery_id for delivery_id, _at in picked]
        WebhookAttempt.objects.filter(delivery_id__in=ids).delete()
        # The attempts are gone: one DELETE, without Django's collector fetching the deliveries
        # to look for them again and deleting a hundred a statement.
        deleted = WebhookDelivery.objects.filter(id__in=ids)._raw_delete(WebhookDelivery.objects.db)
    return DeliveriesPurged(deliveries=deleted, resume_at=picked[-1][1])


def deliveries_delete_on_end_user_data_deleted(event: EndUserDataDeleted) -> None:
    """An end user's data deleted on request: the deliveries of their runs carry a copy of
    them, so they go too, with their attempts (one in flight is deleted all the same: its
    attempt finds the row gone and records nothing)."""
    deliveries = WebhookDelivery.objects.filter(agent_id=event.agent_id, run_id__in=event.run_ids)
    WebhookAttempt.objects.filter(delivery__in=deliveries).delete()
    deliveries.delete()
