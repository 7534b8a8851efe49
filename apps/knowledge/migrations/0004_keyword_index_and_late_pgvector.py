"""Keyword search on an Agent with most of the chunks, and pgvector installed after 0003.

1. A GIN index on `search_vector` alone (searchable chunks), beside the (agent_id,
   search_vector) one. With btree_gin, a lookup in the two-column index intersects the term's
   postings with ALL of the Agent's, which costs 10 ms a term when one Agent holds a million
   chunks; the planner now takes this index when the Agent filter selects most of the table and
   the two-column one when it is selective (docs/performance.md, "Hybrid search at a million").
2. Where pgvector became available after 0003 ran (scripts/install_os_packages.sh installs it
   on a machine that did not have it), the vector column and its HNSW index are added now, and
   the embeddings made without them are cleared: the embedding sweep computes them again, so
   semantic search covers every chunk.
"""

import importlib

from django.db import migrations

PLAIN_KEYWORD_INDEX = (
    "CREATE INDEX IF NOT EXISTS knowledge_chunk_search_plain ON knowledge_chunk "
    "USING gin (search_vector) WHERE is_searchable"
)


def forward(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    schema_editor.execute(PLAIN_KEYWORD_INDEX)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        available = cursor.fetchone() is not None
        cursor.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_name = 'knowledge_chunk' AND column_name = 'embedding_vector'"
        )
        present = cursor.fetchone() is not None
    if available and not present:
        hybrid = importlib.import_module("apps.knowledge.migrations.0003_hybrid_search")
        for statement in hybrid.PGVECTOR_FORWARD:
            schema_editor.execute(statement)
        schema_editor.execute(
            "UPDATE knowledge_chunk SET embedding = NULL, embedding_bits = NULL "
            "WHERE embedding IS NOT NULL"
        )
        schema_editor.execute(
            "UPDATE knowledge_document SET embedded_chunk_count = 0 WHERE embedded_chunk_count > 0"
        )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS knowledge_chunk_search_plain")


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_hybrid_search")]

    operations = [migrations.RunPython(forward, backward)]
