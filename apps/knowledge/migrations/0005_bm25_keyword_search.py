"""BM25 keyword search: term statistics, passage languages, CJK bigrams.

PostgreSQL keeps, per Agent, how many searchable chunks hold each term (`knowledge_term`) and
how many searchable chunks there are with their summed lengths (`knowledge_term_total`): the
document frequencies and average length BM25 needs. Statement-level triggers on knowledge_chunk
keep them, from the rows each INSERT (COPY included), UPDATE and DELETE touched (transition
tables), so every path that writes chunks or flips `is_searchable` is counted, in its own
transaction. Rows are locked in (agent, term) order, so two writers of one Agent wait for each
other instead of deadlocking. The row trigger that writes `search_vector` now reads
`index_text` (CJK text cut into character pairs) when a chunk has one. Existing chunks are
counted once here.
"""

import re

import django.db.models.deletion
from django.db import migrations, models


# The chunks a trigger's statement added (+1) or removed (-1) from the searchable set.
_DELTAS = {
    "insert": "SELECT agent_id, search_vector, 1 AS sign FROM new_chunks WHERE is_searchable",
    "delete": "SELECT agent_id, search_vector, -1 AS sign FROM old_chunks WHERE is_searchable",
    # Only rows whose vector or flag changed: the embedding task's updates cost a join of one row.
    "update": """
        SELECT o.agent_id, o.search_vector, -1 AS sign
        FROM old_chunks o JOIN new_chunks n ON n.id = o.id
        WHERE o.is_searchable AND (NOT n.is_searchable OR n.search_vector IS DISTINCT FROM
              o.search_vector OR n.agent_id <> o.agent_id)
        UNION ALL
        SELECT n.agent_id, n.search_vector, 1 AS sign
        FROM old_chunks o JOIN new_chunks n ON n.id = o.id
        WHERE n.is_searchable AND (NOT o.is_searchable OR n.search_vector IS DISTINCT FROM
              o.search_vector OR n.agent_id <> o.agent_id)
    """,
}
_FUNCTION = """
CREATE FUNCTION knowledge_chunk_terms_{event}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO knowledge_term (agent_id, term, chunks)
    SELECT d.agent_id, t.term, sum(d.sign)
    FROM ({delta}) d, unnest(tsvector_to_array(d.search_vector)) AS t(term)
    GROUP BY 1, 2 HAVING sum(d.sign) <> 0 ORDER BY 1, 2
    ON CONFLICT (agent_id, term) DO UPDATE SET chunks = knowledge_term.chunks + EXCLUDED.chunks;
    INSERT INTO knowledge_term_total (agent_id, chunks, lexemes)
    SELECT d.agent_id, sum(d.sign), sum(d.sign * length(d.search_vector))
    FROM ({delta}) d GROUP BY 1 HAVING sum(d.sign) <> 0 ORDER BY 1
    ON CONFLICT (agent_id) DO UPDATE SET chunks = knowledge_term_total.chunks + EXCLUDED.chunks,
        lexemes = knowledge_term_total.lexemes + EXCLUDED.lexemes;
    IF '{event}' <> 'insert' THEN
        DELETE FROM knowledge_term k USING (
            SELECT DISTINCT d.agent_id, t.term FROM ({delta}) d,
                unnest(tsvector_to_array(d.search_vector)) AS t(term) WHERE d.sign < 0
        ) gone
        WHERE k.agent_id = gone.agent_id AND k.term = gone.term AND k.chunks <= 0;
        DELETE FROM knowledge_term_total WHERE chunks <= 0;
    END IF;
    RETURN NULL;
END $$
"""
_TRIGGER = {
    "insert": "AFTER INSERT ON knowledge_chunk REFERENCING NEW TABLE AS new_chunks",
    "delete": "AFTER DELETE ON knowledge_chunk REFERENCING OLD TABLE AS old_chunks",
    "update": "AFTER UPDATE ON knowledge_chunk "
    "REFERENCING OLD TABLE AS old_chunks NEW TABLE AS new_chunks",
}

POSTGRES_FORWARD = [
    """
    CREATE OR REPLACE FUNCTION knowledge_chunk_search_vector() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        NEW.search_vector := to_tsvector(
            NEW.search_config::regconfig, translate(coalesce(NEW.index_text, NEW.text), '<>', '  '));
        RETURN NEW;
    END $$
    """,
    "DROP TRIGGER knowledge_chunk_search_vector ON knowledge_chunk",
    "CREATE TRIGGER knowledge_chunk_search_vector "
    "BEFORE INSERT OR UPDATE OF text, search_config, index_text "
    "ON knowledge_chunk FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_search_vector()",
    *(_FUNCTION.format(event=event, delta=delta) for event, delta in _DELTAS.items()),
    *(
        f"CREATE TRIGGER knowledge_chunk_terms_{event} {clause} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_terms_{event}()"
        for event, clause in _TRIGGER.items()
    ),
    # The chunks already there, counted once.
    """
    INSERT INTO knowledge_term (agent_id, term, chunks)
    SELECT c.agent_id, t.term, count(*)
    FROM knowledge_chunk c, unnest(tsvector_to_array(c.search_vector)) AS t(term)
    WHERE c.is_searchable GROUP BY 1, 2
    """,
    """
    INSERT INTO knowledge_term_total (agent_id, chunks, lexemes)
    SELECT agent_id, count(*), sum(length(search_vector)) FROM knowledge_chunk
    WHERE is_searchable GROUP BY 1
    """,
]
POSTGRES_BACKWARD = [
    *(
        f"DROP TRIGGER IF EXISTS knowledge_chunk_terms_{event} ON knowledge_chunk"
        for event in _TRIGGER
    ),
    *(f"DROP FUNCTION IF EXISTS knowledge_chunk_terms_{event}()" for event in _TRIGGER),
    "DROP TRIGGER knowledge_chunk_search_vector ON knowledge_chunk",
    """
    CREATE OR REPLACE FUNCTION knowledge_chunk_search_vector() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        NEW.search_vector := to_tsvector(
            NEW.search_config::regconfig, translate(NEW.text, '<>', '  '));
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER knowledge_chunk_search_vector BEFORE INSERT OR UPDATE OF text, search_config "
    "ON knowledge_chunk FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_search_vector()",
]


# Chunks that may hold CJK text (the same classes as apps.common.lexical): re-indexed as
# character pairs, or a CJK query would no longer find them.
_CJK_PATTERN = "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"


def _bigram_cjk_chunks(apps, schema_editor) -> None:
    from apps.common.lexical import index_text

    connection = schema_editor.connection
    operator = "~" if connection.vendor == "postgresql" else "REGEXP"
    if connection.vendor != "postgresql":
        connection.connection.create_function(
            "regexp", 2, lambda pattern, text: text is not None and bool(re.search(pattern, text))
        )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, text FROM knowledge_chunk WHERE text {operator} %s",  # noqa: S608
            [_CJK_PATTERN],
        )
        rows = [(index_text(text), chunk_id, text) for chunk_id, text in cursor.fetchall()]
        rows = [row for row in rows if row[0] is not None]
        cursor.executemany(
            "UPDATE knowledge_chunk SET index_text = %s WHERE id = %s", [row[:2] for row in rows]
        )
        if connection.vendor != "postgresql":
            cursor.executemany(
                "DELETE FROM knowledge_chunk_fts WHERE rowid = %s", [(row[1],) for row in rows]
            )
            cursor.executemany(
                "INSERT INTO knowledge_chunk_fts (rowid, text) VALUES (%s, %s)",
                [(row[1], row[0]) for row in rows],
            )


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_FORWARD:
            schema_editor.execute(statement)
    _bigram_cjk_chunks(apps, schema_editor)
    Document = apps.get_model("knowledge", "KnowledgeDocument")
    Document.objects.update(search_configs=models.F("language"))


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0004_keyword_index_and_late_pgvector"),
        ("workspaces", "0006_api_key_kind"),
    ]

    operations = [
        migrations.CreateModel(
            name="KnowledgeTermTotal",
            fields=[
                (
                    "agent",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="workspaces.agent",
                    ),
                ),
                ("chunks", models.BigIntegerField()),
                ("lexemes", models.BigIntegerField()),
            ],
            options={
                "db_table": "knowledge_term_total",
            },
        ),
        migrations.AddField(
            model_name="knowledgechunk",
            name="index_text",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="knowledgedocument",
            name="search_configs",
            field=models.CharField(default="simple", max_length=400),
        ),
        migrations.CreateModel(
            name="KnowledgeTerm",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("term", models.TextField()),
                ("chunks", models.IntegerField()),
                (
                    "agent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.agent",
                    ),
                ),
            ],
            options={
                "db_table": "knowledge_term",
                "constraints": [
                    models.UniqueConstraint(fields=("agent", "term"), name="knowledge_term_unique")
                ],
            },
        ),
        migrations.RunPython(forward, backward),
    ]
