"""The unanswered questions sweep (beat task `knowledge.gaps_sweep`): it reads the retrieval steps
activity recorded (`steps`), groups their questions (`grouping`) and prunes old document
retrievals. The owner's resolve and reopen are `resolution`.

The sweep reads `activity.RunStep` rows (a rollup built from another app's rows, as
docs/architecture.md allows: read, never written) in the order of their row key, from where it
stopped. A row is read once it is KNOWLEDGE_GAPS_SETTLE_SECONDS old: recording inserts a batch's
steps inside one transaction, so a row key taken by a transaction that has not committed yet
could otherwise be passed over for good; rows are written inside requests that end in seconds.
Every write is idempotent (unique step per Agent, unique run and document), so a pass that
stopped half-way and runs again counts nothing twice.

Grouping embeds each distinct question once (the packaged model of apps.knowledge.embeddings)
and assigns it to the nearest group centroid (apps.knowledge.gaps.clustering); nothing is
recomputed when the page or the API reads the groups.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.utils import timezone

from apps.knowledge.gaps.grouping import _occurrences_group
from apps.knowledge.gaps.models import KnowledgeDocumentRetrieval
from apps.knowledge.gaps.positions import SweepResult
from apps.knowledge.gaps.steps import _steps_read

# How long "how often a document was retrieved" looks back; older retrievals are pruned.
RETRIEVAL_DAYS = 30
# Retrievals deleted per pass.
PRUNE_BATCH = 5000


def gaps_sweep(*, budget_seconds: float = 20.0, now: datetime | None = None) -> SweepResult:
    """Read the retrieval steps recorded since the last pass, group the new unanswered
    questions, prune retrievals past RETRIEVAL_DAYS; stop starting new batches after
    `budget_seconds` (the next beat tick carries on)."""
    result = SweepResult()
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        read = _steps_read(result, now=now)
        if read is None:
            result.busy = True
            break
        if not read:
            break
    while time.monotonic() < deadline:
        grouped = _occurrences_group(result, now=now)
        if grouped is None:
            result.busy = True
            break
        if not grouped:
            break
    result.pruned = _retrievals_prune(now=now)
    return result


def _retrievals_prune(*, now: datetime | None) -> int:
    """Delete document retrievals older than RETRIEVAL_DAYS, one bounded batch per pass."""
    cutoff = (now or timezone.now()) - timedelta(days=RETRIEVAL_DAYS)
    old = list(
        KnowledgeDocumentRetrieval.objects.filter(retrieved_at__lt=cutoff)
        .order_by("retrieved_at")
        .values_list("id", flat=True)[:PRUNE_BATCH]
    )
    if not old:
        return 0
    deleted, _ = KnowledgeDocumentRetrieval.objects.filter(id__in=old).delete()
    return deleted
