"""Migration 0005 on data written before it: CJK chunks re-indexed as character pairs, and the
term statistics counted from the chunks already there."""

import importlib
from types import SimpleNamespace

import pytest
from django.db import connection

from apps.knowledge import search
from apps.knowledge.models import KnowledgeChunk, KnowledgeTerm, KnowledgeTermTotal
from tests.knowledge.conftest import make_file_document

BM25 = importlib.import_module("apps.knowledge.migrations.0005_bm25_keyword_search")
JAPANESE = "# 天気\n\n東京都の明日の天気は晴れのち曇りです。\n"
ENGLISH = "# Refunds\n\nA refund is paid to the original card within fourteen days.\n"


def test_cjk_chunks_written_before_are_indexed_as_pairs(agent):
    document = make_file_document(agent, JAPANESE.encode(), "tenki.md")
    make_file_document(agent, ENGLISH.encode(), "refunds.md")
    # As the code before 0005 left them: no pairs, the FTS row (SQLite) holding the text.
    chunk = KnowledgeChunk.objects.get(document=document)
    KnowledgeChunk.objects.filter(pk=chunk.pk).update(index_text=None)
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE knowledge_chunk_fts SET text = %s WHERE rowid = %s", [chunk.text, chunk.pk]
            )
    assert search.search_chunks(agent=agent, query="東京の明日", limit=5, mode="keyword") == []
    # The migration's data step reads only the editor's connection (SQLite's schema editor
    # cannot open inside a test's transaction).
    BM25._bigram_cjk_chunks(None, SimpleNamespace(connection=connection))
    assert KnowledgeChunk.objects.get(pk=chunk.pk).index_text is not None
    assert KnowledgeChunk.objects.exclude(document=document).get().index_text is None
    hits = search.search_chunks(agent=agent, query="東京の明日", limit=5, mode="keyword")
    assert [hit.document_id for hit in hits] == [document.pk]


def test_term_statistics_are_counted_from_the_chunks_already_there(agent, other_agent):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's FTS5 keeps its own statistics")
    make_file_document(agent, ENGLISH.encode(), "refunds.md")
    make_file_document(other_agent, JAPANESE.encode(), "tenki.md")
    kept = set(KnowledgeTerm.objects.values_list("agent_id", "term", "chunks"))
    totals = set(KnowledgeTermTotal.objects.values_list("agent_id", "chunks", "lexemes"))
    assert kept and totals
    KnowledgeTerm.objects.all().delete()
    KnowledgeTermTotal.objects.all().delete()
    backfill = [statement for statement in BM25.POSTGRES_FORWARD if "count(*)" in statement]
    assert len(backfill) == 2
    with connection.cursor() as cursor:
        for statement in backfill:
            cursor.execute(statement)
    assert set(KnowledgeTerm.objects.values_list("agent_id", "term", "chunks")) == kept
    assert set(KnowledgeTermTotal.objects.values_list("agent_id", "chunks", "lexemes")) == totals
