"""Claims on a document's work: the lease a claim holds, the heartbeat that renews it while a
worker works, its release, and how long queued work may wait before it counts as lost."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F, Q
from django.utils import timezone

from apps.knowledge.models import KnowledgeDocument

logger = logging.getLogger(__name__)


def claim_lease() -> timedelta:
    """How long a claim lasts without a heartbeat (KNOWLEDGE_CLAIM_LEASE_SECONDS, 30 s).

    A live worker renews it every third of that while it works (`_heartbeat`), so a long fetch
    or extraction keeps its claim; a killed worker's claim runs out within one lease, and the
    `knowledge.recover_stalled` sweep (every KNOWLEDGE_RECOVER_INTERVAL_SECONDS) queues it again.
    """
    return timedelta(seconds=settings.KNOWLEDGE_CLAIM_LEASE_SECONDS)


def queue_grace() -> timedelta:
    """Work queued this long ago and never claimed is queued again: the broker lost the message
    (a Redis restart without persistence, a killed worker's prefetched task). Long, because a
    busy queue is not a lost one; a task that could not be queued at all does not wait for it."""
    return timedelta(seconds=settings.KNOWLEDGE_QUEUE_GRACE_SECONDS)


def _claim(document_id: str, *, work: Q) -> tuple[str, KnowledgeDocument | None]:
    now = timezone.now()
    claimed = (
        KnowledgeDocument.objects.filter(work, pk=document_id)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + claim_lease(), attempts=F("attempts") + 1)
    )
    if not claimed:
        busy = KnowledgeDocument.objects.filter(work, pk=document_id).exists()
        return ("busy" if busy else "obsolete"), None
    document = KnowledgeDocument.objects.filter(pk=document_id).first()
    return ("claimed", document) if document is not None else ("obsolete", None)


@contextmanager
def _heartbeat(document_id: str, *, work: Q) -> Iterator[None]:
    """Renew the claim every third of the lease while the caller works.

    A thread of its own (with its own database connection) does it, because the caller spends
    its time blocked in a fetch or waiting for the extraction subprocess. The renewal only
    touches a claim that is still held, so a document released or deleted meanwhile is left.
    """
    lease = claim_lease()
    stop = threading.Event()

    def renew() -> None:
        try:
            while not stop.wait(lease.total_seconds() / 3):
                KnowledgeDocument.objects.filter(
                    work, pk=document_id, claimed_until__isnull=False
                ).update(claimed_until=timezone.now() + lease)
        except Exception:
            logger.warning("could not renew the claim on %s", document_id, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=renew, name=f"claim-heartbeat-{document_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _release(document_id: str, *, work: Q, **changes) -> bool:
    changes.update(claimed_until=None, attempts=0, queued_at=None, updated_at=timezone.now())
    return bool(KnowledgeDocument.objects.filter(work, pk=document_id).update(**changes))
