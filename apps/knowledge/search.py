"""Full-text search over an Agent's chunks, and the index that serves it.

PostgreSQL: each chunk has a stored generated `search_vector` (to_tsvector('simple', text),
GIN-indexed). A query goes through `websearch_to_tsquery('simple', ...)` (quoted phrases, `or`,
`-word`, never a syntax error), is ranked with `ts_rank_cd` and highlighted with `ts_headline`,
which runs only on the rows returned.

SQLite: an FTS5 table (rowid = chunk id) that `index_chunks` and `unindex_chunks` keep in step
with the chunk rows; the same query syntax is translated to an FTS5 expression, ranked with
bm25 and highlighted with snippet().

Both return the same shape. Only chunks of the current version of enabled, ready documents
are searched, so disabling a document hides it at once and re-enabling brings it back without
re-indexing.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from django.db import connection

from apps.workspaces.models import Agent

# Markers around highlighted words inside the database's snippet; control characters, so they
# cannot be confused with the text, which is HTML-escaped before they become <mark> tags.
_START, _STOP = "\x02", "\x03"
_CONTROL_MARKERS = re.compile("[\x02\x03]")
_TERM = re.compile(r'(-?)"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    document_id: str
    document_name: str
    heading_path: list[str]
    position: int
    snippet: str  # HTML-escaped text with <mark>...</mark> around matched words
    score: float


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def index_chunks(chunks) -> None:
    """Add chunks (saved rows, with ids) to the SQLite FTS table; PostgreSQL needs nothing."""
    if is_postgres() or not chunks:
        return
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO knowledge_chunk_fts (rowid, text) VALUES (%s, %s)",
            [(chunk.pk, chunk.text) for chunk in chunks],
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


def search_chunks(*, agent: Agent, query: str, limit: int) -> list[SearchHit]:
    if is_postgres():
        rows = _search_postgres(agent_id=agent.pk, query=query, limit=limit)
    else:
        expression = fts5_expression(query)
        if not expression:
            return []
        rows = _search_sqlite(agent_id=agent.pk, expression=expression, limit=limit)
    return [
        SearchHit(
            chunk_id=row[0],
            document_id=row[1],
            document_name=row[2],
            heading_path=_json_list(row[3]),
            position=row[4],
            snippet=render_snippet(row[5]),
            score=round(float(row[6]), 6),
        )
        for row in rows
    ]


_POSTGRES_SQL = """
WITH q AS (SELECT websearch_to_tsquery('simple', %(query)s) AS query),
top AS (
    SELECT c.id, c.document_id, c.heading_path, c.position, c.text,
           ts_rank_cd(c.search_vector, q.query, 1) AS score
    FROM knowledge_chunk c
    JOIN knowledge_document d
      ON d.id = c.document_id AND d.current_version_id = c.version_id
    CROSS JOIN q
    WHERE c.agent_id = %(agent_id)s
      AND d.agent_id = %(agent_id)s
      AND d.is_enabled
      AND d.status = 'ready'
      AND c.search_vector @@ q.query
    ORDER BY score DESC, c.id
    LIMIT %(limit)s
)
SELECT top.id, top.document_id, d.name, top.heading_path, top.position,
       ts_headline('simple', translate(top.text, '<>', %(brackets)s), q.query, %(headline)s)
         AS snippet, top.score
FROM top
JOIN knowledge_document d ON d.id = top.document_id
CROSS JOIN q
ORDER BY top.score DESC, top.id
"""
# ts_headline would strip anything that looks like a tag (`<!DOCTYPE html>` in a code block);
# angle brackets travel through it as look-alikes and are restored by render_snippet.
_BRACKET_STANDINS = "\u2039\u203a"
_HEADLINE_OPTIONS = (
    f"StartSel={_START}, StopSel={_STOP}, MaxWords=40, MinWords=15, "
    'ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "'
)


def _search_postgres(*, agent_id: str, query: str, limit: int) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            _POSTGRES_SQL,
            {
                "query": query,
                "agent_id": agent_id,
                "limit": limit,
                "headline": _HEADLINE_OPTIONS,
                "brackets": _BRACKET_STANDINS,
            },
        )
        return cursor.fetchall()


_SQLITE_SQL = """
SELECT c.id, c.document_id, d.name, c.heading_path, c.position,
       snippet(knowledge_chunk_fts, 0, char(2), char(3), ' … ', 32) AS snippet,
       -bm25(knowledge_chunk_fts) AS score
FROM knowledge_chunk_fts
JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid
JOIN knowledge_document d ON d.id = c.document_id AND d.current_version_id = c.version_id
WHERE knowledge_chunk_fts MATCH %s
  AND c.agent_id = %s
  AND d.is_enabled
  AND d.status = 'ready'
ORDER BY bm25(knowledge_chunk_fts), c.id
LIMIT %s
"""


def _search_sqlite(*, agent_id: str, expression: str, limit: int) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(_SQLITE_SQL, [expression, agent_id, limit])
        return cursor.fetchall()


def fts5_expression(query: str) -> str:
    """Translate websearch syntax ("a phrase", or, -word, plain words) to an FTS5 expression.

    Every term is quoted, so nothing a user types is FTS5 syntax; words are ANDed, `or`
    between two terms ORs them, and `-term` excludes (FTS5 needs a positive term first).
    """
    positives: list[str] = []
    negatives: list[str] = []
    pending_or = False
    for match in _TERM.finditer(query):
        negate, phrase, bare = match.group(1), match.group(2), match.group(3)
        if bare is not None:
            if bare.lower() == "or" and positives:
                pending_or = True
                continue
            negate = "-" if bare.startswith("-") and len(bare) > 1 else ""
            phrase = bare[1:] if negate else bare
        words = _WORD.findall(phrase or "")
        if not words:
            continue
        term = '"' + " ".join(words) + '"'
        if negate:
            negatives.append(term)
        elif pending_or and positives:
            positives[-1] = f"({positives[-1]} OR {term})"
            pending_or = False
        else:
            positives.append(term)
    if not positives:
        return ""
    expression = " AND ".join(positives)
    for term in negatives:
        expression = f"({expression}) NOT {term}"
    return expression


def render_snippet(raw: str | None) -> str:
    """Escape the snippet's text and turn the database's markers into <mark> tags."""
    if not raw:
        return ""
    if is_postgres():
        raw = raw.translate({ord(_BRACKET_STANDINS[0]): "<", ord(_BRACKET_STANDINS[1]): ">"})
    escaped = html.escape(raw, quote=False)
    # Unbalanced markers (a fragment cut inside one) are dropped rather than left open.
    parts = re.split(f"({_START}|{_STOP})", escaped)
    out: list[str] = []
    open_mark = False
    for part in parts:
        if part == _START and not open_mark:
            out.append("<mark>")
            open_mark = True
        elif part == _STOP and open_mark:
            out.append("</mark>")
            open_mark = False
        elif part not in (_START, _STOP):
            out.append(part)
    if open_mark:
        out.append("</mark>")
    return _CONTROL_MARKERS.sub("", "".join(out))


def _json_list(value) -> list[str]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        import json

        try:
            loaded = json.loads(value)
        except ValueError:
            return []
        return loaded if isinstance(loaded, list) else []
    return []
