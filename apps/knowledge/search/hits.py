"""What a search returns: the chosen passages read back with their document's name, and each
turned into a `SearchHit` with its snippet and how its score came about."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection

from apps.common import lexical
from apps.knowledge.search import snippets
from apps.knowledge.search.state import is_postgres

if TYPE_CHECKING:
    from apps.knowledge.search.scoring import Scored


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    document_id: str
    document_name: str
    heading_path: list[str]
    position: int
    snippet: str  # HTML-escaped text with <mark>...</mark> around matched words
    score: float  # calibrated relevance in [0, 1] (apps.knowledge.relevance)
    text: str = ""  # the passage's full text (markdown)
    # How the score came about (the console's retrieval test shows them): the passage's place
    # in the keyword and semantic candidate lists (1 = first; None: not in that list), the
    # evidence the score is computed from, and the fused reciprocal-rank score (hybrid).
    keyword_rank: int | None = None
    semantic_rank: int | None = None
    coverage: float = 0.0
    similarity: float | None = None
    fused: float | None = None
    contents_page: bool = False  # a table of contents or index page (relevance.CONTENTS_FACTOR)
    fused_rank: int | None = None  # place in the fused list (hybrid), 1 = first

    @property
    def section_path(self) -> list[str]:
        """The headings to show after the document's name: a first heading that repeats the
        name (a file's own title) is not said twice."""
        path = self.heading_path
        if path and path[0].strip().casefold() == self.document_name.strip().casefold():
            return path[1:]
        return path


# The rows are found by primary key first (a materialised CTE), then checked: left to itself,
# the planner may AND the key lookup with the Agent's entries of the (agent_id, search_vector)
# index, which costs a second for an Agent of a million chunks whose statistics lag a bulk load.
_POSTGRES_HITS_SQL = """
WITH picked AS MATERIALIZED (SELECT * FROM knowledge_chunk WHERE id = ANY(%(ids)s))
SELECT c.id, c.document_id, d.name, c.heading_path, c.position, NULL,
       c.text, c.index_text IS NOT NULL,
       ARRAY(SELECT unnest(tsvector_to_array(c.search_vector))
             INTERSECT SELECT unnest(%(terms)s::text[])),
       NULL, c.embedding, c.embedding_model
FROM picked c
JOIN knowledge_document d ON d.id = c.document_id
WHERE c.agent_id = %(agent_id)s AND c.is_searchable
"""
_SQLITE_HITS_SQL = """
SELECT c.id, c.document_id, d.name, c.heading_path, c.position, NULL, c.text,
       c.index_text IS NOT NULL, NULL, c.index_text, c.embedding, c.embedding_model
FROM knowledge_chunk c
JOIN knowledge_document d ON d.id = c.document_id
WHERE c.id IN ({placeholders}) AND c.agent_id = %s AND c.is_searchable
"""


def read_hits(*, agent_id: str, terms: list[str], ids: list[int]) -> list[tuple]:
    """The returned chunks with their document's name, a highlighted snippet (PostgreSQL),
    their text, the query terms they hold (PostgreSQL) and their vectors."""
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute(
                _POSTGRES_HITS_SQL,
                {
                    "ids": ids,
                    "agent_id": agent_id,
                    "terms": terms,
                },
            )
        else:
            sql = _SQLITE_HITS_SQL.format(placeholders=",".join(["%s"] * len(ids)))
            cursor.execute(sql, [*ids, agent_id])
        return cursor.fetchall()


def build_hits(
    scored: list[Scored],
    *,
    min_score: float,
    shown_words: str,
    readings: list[str],
    keyword: list[int],
    semantic: list[int],
    ranked_ids: list[int],
    fused: dict[int, float],
    database_snippets: dict[int, str],
) -> list[SearchHit]:
    """The scored passages at or over `min_score` as hits, in the given order: each with its
    snippet (the query's words marked; a table's matching row) and its places in the keyword,
    semantic and fused lists."""
    keyword_ranks = {chunk_id: rank for rank, chunk_id in enumerate(keyword, start=1)}
    semantic_ranks = {chunk_id: rank for rank, chunk_id in enumerate(semantic, start=1)}
    fused_ranks = (
        {chunk_id: rank for rank, chunk_id in enumerate(ranked_ids, start=1)} if fused else {}
    )
    hits = []
    for item in scored:
        if item.score < min_score:
            continue
        row = item.row
        hits.append(
            SearchHit(
                chunk_id=item.chunk_id,
                document_id=row[1],
                document_name=row[2],
                heading_path=[snippets.plain_heading(heading) for heading in json_list(row[3])],
                position=row[4],
                snippet=_snippet(
                    row,
                    shown_words=shown_words,
                    readings=readings,
                    keyword_found=bool(keyword),
                    database_snippet=database_snippets.get(item.chunk_id),
                ),
                score=item.score,
                text=row[6],
                keyword_rank=keyword_ranks.get(item.chunk_id),
                semantic_rank=semantic_ranks.get(item.chunk_id),
                coverage=round(item.coverage, 4),
                similarity=None if item.similarity is None else round(item.similarity, 4),
                fused=round(fused[item.chunk_id], 6) if item.chunk_id in fused else None,
                contents_page=item.contents,
                fused_rank=fused_ranks.get(item.chunk_id),
            )
        )
    return hits


def _snippet(
    row: tuple,
    *,
    shown_words: str,
    readings: list[str],
    keyword_found: bool,
    database_snippet: str | None,
) -> str:
    text, bigrammed = row[6], row[7]
    if is_postgres() or bigrammed:
        # Marked here rather than by ts_headline, which parses every returned passage again
        # (1 ms each): the query's words and index terms, stems as prefixes.
        raw = (
            lexical.highlight(text, shown_words, stems=readings)
            if keyword_found or bigrammed
            else None
        )
    else:
        raw = database_snippet
    table = snippets.table_snippet(
        text, marked=snippets.marked_words(raw) | set(shown_words.split())
    )
    if table is not None:  # the row that matched, under its header
        return snippets.render_snippet(table)
    return snippets.render_snippet(raw) if raw else snippets.plain_snippet(text)


def json_list(value) -> list[str]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except ValueError:
            return []
        return loaded if isinstance(loaded, list) else []
    return []
