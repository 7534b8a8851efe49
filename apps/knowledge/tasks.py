"""Celery tasks of knowledge: thin, named, idempotent (acks_late); each calls one service."""

from celery import shared_task

from apps.knowledge import embeddings, pipeline


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
    """Embed a bounded number of a document's chunks; queue itself again while some remain."""
    try:
        outcome = embeddings.document_embed(document_id=document_id)
    finally:
        embeddings.release_memory()
    if outcome == "more":
        embed.apply_async(args=[document_id], retry=False)
    return outcome


@shared_task(name="knowledge.refresh_due")
def refresh_due() -> int:
    return len(pipeline.documents_refresh_due())


@shared_task(name="knowledge.recover_stalled")
def recover_stalled() -> int:
    return len(pipeline.documents_recover_stalled())


@shared_task(name="knowledge.embed_stalled")
def embed_stalled() -> int:
    return len(embeddings.documents_embed_stalled())
