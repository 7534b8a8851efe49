"""Celery tasks of knowledge: thin, named, idempotent (acks_late); each calls one service."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from apps.knowledge import embedding_jobs, embeddings, pipeline
from apps.knowledge.models import KnowledgeDocument


@shared_task(name="knowledge.ingest")
def ingest(document_id: str) -> str:
    try:
        return pipeline.document_ingest(document_id=document_id)
    finally:
        # A 10 MB document leaves hundreds of MB freed but still held by the process.
        embeddings.release_memory()


@shared_task(name="knowledge.refresh")
def refresh(document_id: str) -> str:
    try:
        return pipeline.document_refresh(document_id=document_id)
    finally:
        embeddings.release_memory()


@shared_task(name="knowledge.embed")
def embed(document_id: str) -> str:
    """Embed a document's chunks for a bounded time (KNOWLEDGE_EMBED_TASK_SECONDS), never up to
    the time limit: the rest goes to a follow-up queued at once; after a failed batch, the
    follow-up waits out the backoff the document records (`embedding_retry_at`). Should the soft
    time limit strike all the same (a slow model load on a starved CPU), the run hands over
    instead of failing."""
    try:
        outcome = embedding_jobs.document_embed(
            document_id=document_id, budget_seconds=settings.KNOWLEDGE_EMBED_TASK_SECONDS
        )
    except SoftTimeLimitExceeded:
        embedding_jobs.document_embed_release(document_id=document_id)
        outcome = "more"
    finally:
        embeddings.release_memory()
    try:
        _follow_up(document_id, outcome)
    except SoftTimeLimitExceeded:  # struck while queueing: queue it (again; a double is "busy")
        _follow_up(document_id, outcome)
    return outcome


def _follow_up(document_id: str, outcome: str) -> None:
    if outcome == "more":
        embed.apply_async(args=[document_id], retry=False)
    elif outcome == "retry":
        # A short countdown (at most 5 minutes, far below the broker's visibility timeout);
        # should it be lost, knowledge.embed_stalled queues the document again.
        failures = (
            KnowledgeDocument.objects.filter(pk=document_id)
            .values_list("embedding_failures", flat=True)
            .first()
        )
        embed.apply_async(
            args=[document_id], countdown=embedding_jobs.retry_delay(failures or 1), retry=False
        )


@shared_task(name="knowledge.refresh_due")
def refresh_due() -> int:
    return len(pipeline.documents_refresh_due())


@shared_task(name="knowledge.recover_stalled")
def recover_stalled() -> int:
    return len(pipeline.documents_recover_stalled())


@shared_task(name="knowledge.embed_stalled")
def embed_stalled() -> int:
    return len(embedding_jobs.documents_embed_stalled())
