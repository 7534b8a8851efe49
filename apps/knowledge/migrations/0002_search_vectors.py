"""Search vectors for chunks, one form per database.

PostgreSQL: a stored generated tsvector column with the 'simple' configuration (no stemming and
no stop words, so text in any language matches word for word) and a GIN index, so a chunk's
vector is written with the chunk and deleted with it. Angle brackets are blanked first: the
parser would otherwise take `<!DOCTYPE html>` or `<div>` in a code block for markup and drop
the words inside.

SQLite (the embedded default): an FTS5 table whose rowid is the chunk id, kept in sync by
apps.knowledge.search.fts.index_chunks / unindex_chunks.
"""

from django.db import migrations

POSTGRES_FORWARD = [
    "ALTER TABLE knowledge_chunk ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, translate(text, '<>', '  '))) STORED",
    # Serves POST /knowledge/search: `search_vector @@ websearch_to_tsquery(...)`.
    "CREATE INDEX knowledge_chunk_search ON knowledge_chunk USING gin (search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS knowledge_chunk_search",
    "ALTER TABLE knowledge_chunk DROP COLUMN IF EXISTS search_vector",
]
SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE knowledge_chunk_fts USING fts5("
    "text, tokenize = 'unicode61 remove_diacritics 2')",
]
SQLITE_BACKWARD = ["DROP TABLE IF EXISTS knowledge_chunk_fts"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD}),
        ),
    ]
