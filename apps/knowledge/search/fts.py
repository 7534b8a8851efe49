"""SQLite's full-text index of chunks (an FTS5 table), kept by ingestion and deletion.
PostgreSQL keeps its own (`search_vector`, written by a trigger): there these do nothing."""

from __future__ import annotations

from django.db import connection

from apps.knowledge.search.state import is_postgres


def index_chunks(chunks) -> None:
    """Add chunks (saved rows, with ids) to the SQLite FTS table; PostgreSQL needs nothing."""
    if is_postgres() or not chunks:
        return
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO knowledge_chunk_fts (rowid, text) VALUES (%s, %s)",
            [(chunk.pk, chunk.index_text or chunk.text) for chunk in chunks],
        )


def unindex_chunks(*, version_ids=None, document_ids=None) -> None:
    """Remove the FTS rows of some versions' or documents' chunks (SQLite only)."""
    if is_postgres():
        return
    from apps.knowledge.models import KnowledgeChunk

    chunks = KnowledgeChunk.objects.all()
    if version_ids is not None:
        chunks = chunks.filter(version_id__in=list(version_ids))
    if document_ids is not None:
        chunks = chunks.filter(document_id__in=list(document_ids))
    ids = list(chunks.values_list("pk", flat=True))
    if not ids:
        return
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            placeholders = ",".join(["%s"] * len(batch))
            cursor.execute(
                f"DELETE FROM knowledge_chunk_fts WHERE rowid IN ({placeholders})",  # noqa: S608
                batch,
            )
