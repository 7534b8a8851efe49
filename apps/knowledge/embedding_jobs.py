"""The worker's side of embeddings: a document's chunks embedded in bounded batches under a
claim (task `knowledge.embed`), retries with backoff, the sweeper that queues stalled work, the
vectors a refresh carries over, and re-embedding after the model changes (`knowledge_reembed`).

A chunk's windows are stored L2-normalised as float16 bytes, with the sign bits of their mean
beside them (see `KnowledgeChunk.embedding`); the model itself is apps.knowledge.embeddings.
Nothing here can fail ingestion: the document is already keyword-searchable when the first batch
starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.common import metrics
from apps.knowledge.embeddings import (
    embed_passages,
    embedding_key,
    passage_summary,
    pgvector_enabled,
    release_memory,
    vector_literal,
)
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument

logger = logging.getLogger(__name__)


# Beyond a run's time budget: the longest one batch may overrun it by before the lease of a live
# run could expire (a batch of 4 chunks takes well under a second on an idle core).
EMBED_LEASE_MARGIN = timedelta(seconds=90)
# After a failed batch: 10 s, 20 s, 40 s ... at most 5 minutes before the next try.
EMBED_RETRY_FIRST_SECONDS = 10.0
EMBED_RETRY_MAX_SECONDS = 300.0


def retry_delay(failures: int) -> float:
    """Seconds before the next try after `failures` failed runs in a row (1 = the first)."""
    return min(EMBED_RETRY_FIRST_SECONDS * 2 ** max(failures - 1, 0), EMBED_RETRY_MAX_SECONDS)


def _lease(budget: float) -> timedelta:
    # No time budget (a command, a test): the lease covers a run of the soft limit's length.
    seconds = budget if budget != float("inf") else float(settings.CELERY_TASK_SOFT_TIME_LIMIT)
    return timedelta(seconds=seconds) + EMBED_LEASE_MARGIN


def _claim(document_id: str, *, budget: float) -> KnowledgeDocument | None:
    """Take the document's embedding for one run (a conditional update: one run at a time per
    document, however many messages are queued); None when another run holds it or there is
    nothing to embed."""
    now = timezone.now()
    claimed = (
        KnowledgeDocument.objects.filter(pk=document_id, status=KnowledgeDocument.Status.READY)
        .exclude(current_version=None)
        .filter(Q(embedding_claimed_until__isnull=True) | Q(embedding_claimed_until__lt=now))
        .update(embedding_claimed_until=now + _lease(budget))
    )
    if not claimed:
        return None
    return (
        KnowledgeDocument.objects.filter(pk=document_id)
        .only("pk", "current_version_id", "kind", "embedding_failures")
        .first()
    )


def document_embed(
    *, document_id: str, max_batches: int | None = None, budget_seconds: float | None = None
) -> str:
    """Embed the next chunks of a document's current version that have no vector yet.

    Works in batches of KNOWLEDGE_EMBED_BATCH_SIZE chunks and starts no batch after
    `budget_seconds` (the task passes KNOWLEDGE_EMBED_TASK_SECONDS; none: no time budget) or
    `max_batches` (KNOWLEDGE_EMBED_BATCHES_PER_TASK): then it returns "more" and the task
    queues its follow-up at once. It never runs into the soft time limit; should one batch do so, that
    batch is dropped (nothing half-written) and the answer is "more" all the same.

    Returns "done", "more", "retry" (a batch failed: the error and the time of the next try are
    on the document, the task queues that try), "busy" (another run holds the document) or
    "obsolete" (the document is gone, not ready or has no version).
    """
    budget = float(budget_seconds) if budget_seconds else float("inf")
    batches = max_batches if max_batches is not None else settings.KNOWLEDGE_EMBED_BATCHES_PER_TASK
    document = _claim(document_id, budget=budget)
    if document is None:
        held = KnowledgeDocument.objects.filter(
            pk=document_id,
            status=KnowledgeDocument.Status.READY,
            embedding_claimed_until__gte=timezone.now(),
        ).exists()
        return "busy" if held else "obsolete"
    try:
        outcome = _embed_batches(document, batches=batches, budget=budget)
    finally:
        document_embed_release(document_id=document_id)
    if outcome == "done" and _has_unembedded(document_id):
        # A refresh switched versions after the last batch; its own message found the document
        # held and went away: go on with the new version.
        return "more"
    return outcome


def document_embed_release(*, document_id: str) -> None:
    """End a run's claim (its follow-up may take the document at once)."""
    KnowledgeDocument.objects.filter(pk=document_id).update(embedding_claimed_until=None)


def _has_unembedded(document_id: str) -> bool:
    """Chunks of the ready document's current version still without a vector."""
    return KnowledgeChunk.objects.filter(
        document_id=document_id,
        embedding__isnull=True,
        version_id__in=KnowledgeDocument.objects.filter(
            pk=document_id, status=KnowledgeDocument.Status.READY
        ).values("current_version_id"),
    ).exists()


def _embed_batches(document: KnowledgeDocument, *, batches: int, budget: float) -> str:
    """The batches of one run of `document_embed`, which holds the document's claim."""
    document_id = document.pk
    batch_size = settings.KNOWLEDGE_EMBED_BATCH_SIZE
    deadline = time.monotonic() + budget
    try:
        for _ in range(batches):
            if time.monotonic() >= deadline:
                return "more"
            # Read again before each batch: a refresh may have switched the version, a delete
            # or a failed refresh may have made the work obsolete.
            version_id = (
                KnowledgeDocument.objects.filter(
                    pk=document_id, status=KnowledgeDocument.Status.READY
                )
                .exclude(current_version=None)
                .values_list("current_version_id", flat=True)
                .first()
            )
            if version_id is None:
                return "obsolete"
            pending = list(
                KnowledgeChunk.objects.filter(
                    document_id=document_id, version_id=version_id, embedding__isnull=True
                )
                .order_by("id")
                .values_list("id", "text")[:batch_size]
            )
            if not pending:
                _settled(document_id)
                return "done"
            started = time.perf_counter()
            try:
                windows = embed_passages([text for _, text in pending])
                _store(
                    document_id=document_id,
                    ids=[pk for pk, _ in pending],
                    windows=windows,
                    lease=_lease(budget),
                )
            except SoftTimeLimitExceeded:
                raise
            except Exception as exc:
                logger.exception("knowledge embed of %s failed", document_id)
                _failed(document_id, failures=document.embedding_failures + 1, error=exc)
                return "retry"
            metrics.EMBEDDING_DURATION.labels(document.kind).observe(time.perf_counter() - started)
            metrics.EMBEDDED_CHUNKS.labels(document.kind).inc(len(pending))
            document.embedding_failures = 0
            # Each batch's tensors are freed; without a trim glibc keeps them and the process
            # creeps past 400 MB (measured: 430 MB peaks without, see docs/knowledge.md).
            release_memory()
        return "more"
    except SoftTimeLimitExceeded:
        # One batch ran into the soft limit (a machine far slower than the budget allows for):
        # its transaction rolled back; the follow-up embeds it again.
        logger.warning(
            "knowledge embed of %s reached the soft time limit; handing over", document_id
        )
        return "more"


def _settled(document_id: str) -> None:
    """Every passage embedded: no retry pending, no error left."""
    KnowledgeDocument.objects.filter(pk=document_id).exclude(
        embedding_retry_at=None, embedding_error=None, embedding_failures=0
    ).update(embedding_retry_at=None, embedding_error=None, embedding_failures=0)


def _failed(document_id: str, *, failures: int, error: BaseException) -> None:
    message = f"{type(error).__name__}: {error}"[:500]
    KnowledgeDocument.objects.filter(pk=document_id).update(
        embedding_failures=failures,
        embedding_error=message,
        embedding_retry_at=timezone.now() + timedelta(seconds=retry_delay(failures)),
    )


# A document whose embedding has not moved for this long lost its task (broker restart, worker
# killed): the sweeper queues it again. Each batch bumps `updated_at`, so live work is left alone.
EMBED_STALL = timedelta(minutes=5)


def documents_embed_stalled(*, batch_size: int = 100) -> list[str]:
    """Queue knowledge.embed again for ready documents whose embedding stopped part-way (no
    run holds them, no retry is on its way), and for those whose retry is overdue."""
    from apps.knowledge.services import enqueue_after_commit

    now = timezone.now()
    stalled = list(
        KnowledgeDocument.objects.filter(
            status=KnowledgeDocument.Status.READY,
            embedded_chunk_count__lt=F("chunk_count"),
            updated_at__lt=now - EMBED_STALL,
        )
        .filter(Q(embedding_claimed_until__isnull=True) | Q(embedding_claimed_until__lt=now))
        .filter(Q(embedding_retry_at__isnull=True) | Q(embedding_retry_at__lt=now - EMBED_STALL))
        .order_by("updated_at")
        .values_list("pk", flat=True)[:batch_size]
    )
    with transaction.atomic():
        for document_id in stalled:
            enqueue_after_commit("embed", document_id)
    return stalled


def _store(
    *,
    document_id: str | None,
    ids: list[int],
    windows: list[np.ndarray],
    replace: bool = False,
    lease: timedelta | None = None,
) -> None:
    """Write one batch's vectors (every window, and the summary the indexes compare) and move
    the document's progress (and renew the run's `lease`), in one short transaction. Chunks
    deleted meanwhile (a refresh, a delete) are simply not updated. `replace` writes over
    vectors made by another model or windowing (`knowledge_reembed`) without counting them
    again."""
    with_pgvector = pgvector_enabled()
    condition = "embedding_model IS DISTINCT FROM %s" if replace else "embedding IS NULL"
    with transaction.atomic():
        written = 0
        with connection.cursor() as cursor:
            for chunk_id, vectors in zip(ids, windows, strict=True):
                summary = passage_summary(vectors)
                data = vectors.astype("<f2").tobytes()
                bits = np.packbits(summary > 0).tobytes()
                if with_pgvector:
                    cursor.execute(
                        "UPDATE knowledge_chunk SET embedding = %s, embedding_bits = %s, "  # noqa: S608
                        "embedding_model = %s, embedding_vector = %s::vector "
                        f"WHERE id = %s AND {condition}",
                        [
                            data,
                            bits,
                            embedding_key(),
                            vector_literal(summary),
                            chunk_id,
                            *_key(replace),
                        ],
                    )
                else:
                    cursor.execute(
                        "UPDATE knowledge_chunk SET embedding = %s, embedding_bits = %s, "  # noqa: S608
                        f"embedding_model = %s WHERE id = %s AND {condition}",
                        [data, bits, embedding_key(), chunk_id, *_key(replace)],
                    )
                written += cursor.rowcount
        if not replace and document_id is not None:
            now = timezone.now()
            progress: dict = {
                "embedding_progressed_at": now,
                "embedding_retry_at": None,
                "embedding_error": None,
                "embedding_failures": 0,
            }
            if lease is not None:
                progress["embedding_claimed_until"] = now + lease
            KnowledgeDocument.objects.filter(pk=document_id).update(
                embedded_chunk_count=F("embedded_chunk_count") + written,
                updated_at=now,
                **progress,
            )


def _key(replace: bool) -> list[str]:
    return [embedding_key()] if replace else []


def carry_over(*, document: KnowledgeDocument, old_version_id: str, new_version_id: str) -> int:
    """On a refresh, give the new version's chunks the vectors of old chunks with the same text
    (inside the refresh's transaction), so only changed text is embedded again. Sets the
    document's `embedded_chunk_count` (the caller saves it) and returns it."""
    old = dict(
        KnowledgeChunk.objects.filter(version_id=old_version_id, embedding__isnull=False)
        .values_list("text", "id")
        .iterator()
    )
    reused = 0
    with connection.cursor() as cursor:
        for new_id, text in (
            KnowledgeChunk.objects.filter(version_id=new_version_id)
            .values_list("id", "text")
            .iterator()
        ):
            old_id = old.get(text)
            if old_id is None:
                continue
            columns = "embedding, embedding_bits, embedding_model"
            if pgvector_enabled():
                columns += ", embedding_vector"
            cursor.execute(
                f"UPDATE knowledge_chunk SET ({columns}) = "  # noqa: S608 - fixed column names
                f"(SELECT {columns} FROM knowledge_chunk WHERE id = %s) WHERE id = %s",
                [old_id, new_id],
            )
            reused += cursor.rowcount
    document.embedded_chunk_count = reused
    return reused


def _made_otherwise():
    return KnowledgeChunk.objects.filter(embedding__isnull=False).exclude(
        embedding_model=embedding_key()
    )


def chunks_to_reembed() -> int:
    """Embedded chunks whose vectors another model or windowing made."""
    return _made_otherwise().count()


def chunks_reembed(
    *, batch_size: int | None = None, progress: Callable[[int], None] | None = None
) -> int:
    """Embed again, batch by batch, every chunk whose vectors another model or windowing made
    (`knowledge_reembed`, after the model setting or the windows change).

    Each batch replaces its chunks' vectors in its own short transaction, so search keeps
    serving throughout, from the old vectors until each chunk's new ones are written; chunks
    embedded for the first time meanwhile are the embedding task's. Returns the chunks done.
    """
    size = batch_size or settings.KNOWLEDGE_EMBED_BATCH_SIZE
    done = 0
    last_id = 0
    while True:
        batch = list(
            _made_otherwise().filter(id__gt=last_id).order_by("id").values_list("id", "text")[:size]
        )
        if not batch:
            return done
        windows = embed_passages([text for _, text in batch])
        _store(document_id=None, ids=[pk for pk, _ in batch], windows=windows, replace=True)
        release_memory()
        last_id = batch[-1][0]
        done += len(batch)
        if progress is not None:
            progress(done)
