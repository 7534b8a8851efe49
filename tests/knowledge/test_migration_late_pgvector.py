"""pgvector installed after the search migration ran: migration 0004 adds what 0003 could not."""

import importlib

import pytest
from django.db import connection

from apps.knowledge import embedding_jobs, embeddings
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from tests.knowledge.conftest import make_file_document

LATE = importlib.import_module("apps.knowledge.migrations.0004_keyword_index_and_late_pgvector")


def _has_vector_column() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_name = 'knowledge_chunk' AND column_name = 'embedding_vector'"
        )
        return cursor.fetchone() is not None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_a_late_pgvector_gets_its_column_and_the_chunks_are_embedded_again(agent):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            pytest.skip("pgvector is not installed on this PostgreSQL server")
    document = make_file_document(agent, b"# Refunds\n\nA refund is paid in 14 days.\n", "r.md")
    assert embedding_jobs.document_embed(document_id=document.pk, max_batches=10) == "done"
    # The database as 0003 left it on a server that had no pgvector then.
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX knowledge_chunk_vector")
        cursor.execute("ALTER TABLE knowledge_chunk DROP COLUMN embedding_vector")
    embeddings.has_pgvector.cache_clear()
    try:
        with connection.schema_editor() as editor:
            LATE.forward(None, editor)
        assert _has_vector_column()
        document.refresh_from_db()
        assert document.embedded_chunk_count == 0  # the embedding sweep redoes them
        assert not KnowledgeChunk.objects.filter(embedding__isnull=False).exists()
        assert embedding_jobs.document_embed(document_id=document.pk, max_batches=10) == "done"
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM knowledge_chunk WHERE embedding_vector IS NOT NULL"
            )
            assert cursor.fetchone()[0] == KnowledgeDocument.objects.get().chunk_count
    finally:
        embeddings.has_pgvector.cache_clear()
        if not _has_vector_column():  # leave the schema as the other tests expect it
            with connection.schema_editor() as editor:
                LATE.forward(None, editor)
