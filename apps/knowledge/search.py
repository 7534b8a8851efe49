"""Hybrid search over an Agent's chunks: keywords and meaning, fused by reciprocal rank.

Keyword half. PostgreSQL: each chunk's `search_vector` is `to_tsvector(search_config, text)`
(written by a trigger; `search_config` is its document's language, detected at ingestion,
`simple` for CJK and anything unrecognised). The query is parsed with every configuration the
Agent's documents use and the results ORed, so one query finds stemmed English ("refunds" ->
"refund") and word-for-word Chinese alike. The matching rows come from a partial GIN index on
(agent_id, search_vector) WHERE is_searchable; at most KEYWORD_CANDIDATE_CAP of them are ranked,
so a word found in half a million chunks costs a bounded amount. SQLite: an FTS5 table as
before (one tokenizer for every language, no stemming).

Semantic half. The query is embedded by the same model as the chunks (apps.knowledge.embeddings).
With pgvector: an HNSW index ordered by cosine distance. Without it (Debian 12, SQLite): an
in-process array of every embedded chunk's sign bits per Agent, compared by Hamming distance to
pick VECTOR_PREFILTER candidates, whose float16 vectors are then read and scored exactly.

Fusion: reciprocal rank fusion (score = sum of 1 / (RRF_K + rank)) of the two candidate lists;
`mode` may ask for one half alone. The last query reads the returned chunks with their document
name and a highlighted snippet. The number of queries does not depend on the data.
"""

from __future__ import annotations

import html
import json
import re
import threading
from dataclasses import dataclass

import numpy as np
from django.db import connection

from apps.common import metrics
from apps.knowledge import embeddings
from apps.workspaces.models import Agent

MODES = ("hybrid", "keyword", "semantic")
# Candidates each half contributes to the fusion.
CANDIDATES = 50
# Rows a keyword query ranks at most: beyond it a term is too common to rank every match, and
# the first matches found stand in for the rest (the semantic half still orders by meaning).
KEYWORD_CANDIDATE_CAP = 300
# Chunks whose exact vectors are read after the sign-bit scan (the scan's shortlist).
VECTOR_PREFILTER = 400
RRF_K = 60

# Language codes of py3langid -> PostgreSQL text search configurations (PostgreSQL 15 ships
# these). Anything else, CJK included, is searched word for word with "simple".
LANGUAGE_CONFIGS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nb": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
SEARCH_CONFIGS = frozenset(LANGUAGE_CONFIGS.values()) | {"simple"}
# Detection reads this much of a document and trusts only a confident answer on enough text.
_DETECT_CHARS = 20_000
_DETECT_MIN_LETTERS = 40
_DETECT_MIN_PROBABILITY = 0.9

# Markers around highlighted words inside the database's snippet; control characters, so they
# cannot be confused with the text, which is HTML-escaped before they become <mark> tags.
_START, _STOP = "\x02", "\x03"
_CONTROL_MARKERS = re.compile("[\x02\x03]")
# Markdown syntax a snippet shows as text: what the chunk's markdown means is read, not its
# markup. Links keep their text, table rows their cells ("Card · 3-5 days"), headings,
# emphasis and code spans their words.
_MARKDOWN_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")
_TABLE_RULE = re.compile(r"\|?(?:\s*:?-{3,}:?\s*\|)+(?:\s*:?-{3,}:?\s*)?")
_TABLE_PIPES = re.compile(r"(?:\s*\|\s*)+")  # the end of a row and the start of the next: one
_HEADING_MARK = re.compile(r"(?:^|(?<=\s))#{1,6}(?=\s)")
_INLINE_MARKUP = re.compile(r"\*\*|__|`+")
_SPACES = re.compile(r"\s+")
_TERM = re.compile(r'(-?)"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w+")
_MARKUP = re.compile(r"[#*_`>|\[\]()!-]+|https?://\S+")


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    document_id: str
    document_name: str
    heading_path: list[str]
    position: int
    snippet: str  # HTML-escaped text with <mark>...</mark> around matched words
    score: float

    @property
    def section_path(self) -> list[str]:
        """The headings to show after the document's name: a first heading that repeats the
        name (a file's own title) is not said twice."""
        path = self.heading_path
        if path and path[0].strip().casefold() == self.document_name.strip().casefold():
            return path[1:]
        return path


_identifier = None
_identifier_lock = threading.Lock()


def detect_language(markdown: str) -> str:
    """The text search configuration for a document's text: its language when py3langid is
    confident, else "simple" (which also serves Chinese, Japanese and Korean)."""
    global _identifier
    sample = _MARKUP.sub(" ", markdown[:_DETECT_CHARS])
    if sum(character.isalpha() for character in sample) < _DETECT_MIN_LETTERS:
        return "simple"
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        code, probability = _identifier.classify(sample)
    if probability < _DETECT_MIN_PROBABILITY:
        return "simple"
    return LANGUAGE_CONFIGS.get(code, "simple")


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


@metrics.timed(metrics.SEARCH_DURATION, mode="mode")
def search_chunks(*, agent: Agent, query: str, limit: int, mode: str = "hybrid") -> list[SearchHit]:
    """The `limit` best chunks for the query among the Agent's searchable chunks."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}")
    state = _agent_state(agent.pk)
    if state.document_count == 0:
        return []
    pool = max(CANDIDATES, limit)
    keyword: list[int] = []
    snippets: dict[int, str] = {}
    scores: dict[int, float] = {}
    if mode in ("hybrid", "keyword"):
        ranked = _keyword_candidates(
            agent_id=agent.pk, query=query, configs=state.configs, limit=pool
        )
        keyword = [row[0] for row in ranked]
        scores.update((row[0], float(row[1])) for row in ranked)
        snippets.update((row[0], row[2]) for row in ranked if len(row) > 2)
    semantic: list[int] = []
    if mode in ("hybrid", "semantic") and state.embedded_count:
        ranked = _semantic_candidates(agent_id=agent.pk, query=query, state=state, limit=pool)
        semantic = [chunk_id for chunk_id, _ in ranked]
        if mode == "semantic":
            scores = dict(ranked)
    if mode == "hybrid":
        scores = reciprocal_rank_fusion([keyword, semantic])
    chosen = sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))[:limit]
    if not chosen:
        return []
    rows = {row[0]: row for row in _read_hits(agent_id=agent.pk, query=query, ids=chosen)}
    hits = []
    for chunk_id in chosen:
        row = rows.get(chunk_id)
        if row is None:  # deleted or disabled between the two queries
            continue
        raw_snippet = snippets.get(chunk_id) if not is_postgres() else row[5]
        hits.append(
            SearchHit(
                chunk_id=chunk_id,
                document_id=row[1],
                document_name=row[2],
                heading_path=_json_list(row[3]),
                position=row[4],
                snippet=render_snippet(raw_snippet) if raw_snippet else _plain_snippet(row[5]),
                score=round(scores[chunk_id], 6),
            )
        )
    return hits


def reciprocal_rank_fusion(rankings: list[list[int]]) -> dict[int, float]:
    """Each id scores the sum of 1 / (RRF_K + rank) over the rankings it appears in (rank 1 =
    best): agreement between the halves counts more than a high place in one of them."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return fused


# --- what the Agent has --------------------------------------------------------------------


@dataclass(frozen=True)
class AgentSearchState:
    configs: list[str]  # text search configurations of the Agent's ready documents
    document_count: int
    embedded_count: int
    stamp: tuple  # changes whenever the Agent's documents or their vectors change


def _agent_state(agent_id: str) -> AgentSearchState:
    if is_postgres():
        sql = (
            "SELECT coalesce(string_agg(DISTINCT language, ','), ''), count(*), "
            "coalesce(sum(embedded_chunk_count), 0), max(updated_at) "
            "FROM knowledge_document WHERE agent_id = %s AND status = 'ready'"
        )
    else:
        sql = (
            "SELECT coalesce(group_concat(DISTINCT language), ''), count(*), "
            "coalesce(sum(embedded_chunk_count), 0), max(updated_at) "
            "FROM knowledge_document WHERE agent_id = %s AND status = 'ready'"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent_id])
        languages, documents, embedded, changed = cursor.fetchone()
    configs = sorted({name for name in languages.split(",") if name in SEARCH_CONFIGS})
    return AgentSearchState(
        configs=configs or ["simple"],
        document_count=documents,
        embedded_count=embedded,
        stamp=(documents, embedded, str(changed)),
    )


# --- keyword half ----------------------------------------------------------------------------

_POSTGRES_KEYWORD_SQL = """
SELECT c.id, ts_rank_cd(c.search_vector, {tsquery}, 1) AS score
FROM (
    SELECT id, search_vector FROM knowledge_chunk
    WHERE agent_id = %(agent_id)s AND is_searchable AND search_vector @@ {tsquery}
    LIMIT %(cap)s
) c
ORDER BY score DESC, c.id
LIMIT %(limit)s
"""


def _tsquery(configs: list[str]) -> str:
    # Configuration names come from SEARCH_CONFIGS only, never from input; written inline so
    # the planner sees a constant tsquery and uses the GIN index.
    return (
        "("
        + " || ".join(
            f"websearch_to_tsquery('{name}', %(query)s)"
            for name in configs
            if name in SEARCH_CONFIGS
        )
        + ")"
    )


def _keyword_candidates(
    *, agent_id: str, query: str, configs: list[str], limit: int
) -> list[tuple]:
    """(chunk id, score[, raw snippet on SQLite]) of the best keyword matches, best first."""
    if not is_postgres():
        expression = fts5_expression(query)
        if not expression:
            return []
        with connection.cursor() as cursor:
            cursor.execute(_SQLITE_KEYWORD_SQL, [expression, agent_id, limit])
            return cursor.fetchall()
    sql = _POSTGRES_KEYWORD_SQL.format(tsquery=_tsquery(configs))
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {"query": query, "agent_id": agent_id, "cap": KEYWORD_CANDIDATE_CAP, "limit": limit},
        )
        return cursor.fetchall()


_SQLITE_KEYWORD_SQL = """
SELECT c.id, -bm25(knowledge_chunk_fts) AS score,
       snippet(knowledge_chunk_fts, 0, char(2), char(3), ' … ', 32) AS snippet
FROM knowledge_chunk_fts
JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid
WHERE knowledge_chunk_fts MATCH %s
  AND c.agent_id = %s
  AND c.is_searchable
ORDER BY bm25(knowledge_chunk_fts), c.id
LIMIT %s
"""


# --- semantic half ---------------------------------------------------------------------------


def _semantic_candidates(
    *, agent_id: str, query: str, state: AgentSearchState, limit: int
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the chunks nearest the query's meaning, best first."""
    vector = embeddings.embed_texts([query])[0]
    if embeddings.pgvector_enabled():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, 1 - (embedding_vector <=> %(vector)s::vector) FROM knowledge_chunk "
                "WHERE agent_id = %(agent_id)s AND is_searchable "
                "AND embedding_vector IS NOT NULL "
                "ORDER BY embedding_vector <=> %(vector)s::vector LIMIT %(limit)s",
                {
                    "vector": embeddings.vector_literal(vector),
                    "agent_id": agent_id,
                    "limit": limit,
                },
            )
            # An iterative scan returns nearly, not exactly, in order: sort the few it found.
            found = [(row[0], float(row[1])) for row in cursor.fetchall()]
            return sorted(found, key=lambda pair: (-pair[1], pair[0]))
    shortlist = agent_vectors(agent_id=agent_id, stamp=state.stamp).nearest(
        vector, count=VECTOR_PREFILTER
    )
    if not shortlist:
        return []
    placeholders = ",".join(["%s"] * len(shortlist))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding FROM knowledge_chunk "  # noqa: S608 - placeholders only
            f"WHERE id IN ({placeholders}) AND agent_id = %s AND is_searchable "
            "AND embedding IS NOT NULL",
            [*shortlist, agent_id],
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype="<f2").reshape(
        len(rows), embeddings.DIMENSIONS
    )
    similarities = matrix.astype(np.float32) @ vector
    order = np.argsort(-similarities, kind="stable")[:limit]
    return [(rows[index][0], float(similarities[index])) for index in order]


class AgentVectors:
    """The sign bits of every embedded chunk of one Agent, held in process memory.

    48 bytes a chunk (48 MB for a million). `nearest` ranks all of them by Hamming distance to
    the query's bits in a few milliseconds; the exact float16 vectors of the shortlist are then
    read from the database. Chunks no longer searchable may linger here until the next reload:
    the exact read filters them out.
    """

    def __init__(self, ids: np.ndarray, bits: np.ndarray, stamp: tuple) -> None:
        self.ids = ids
        # One row per 64-bit word of the bits (6 rows of n): each pass of the scan reads one
        # contiguous row, four times faster than row-per-chunk (measured at a million).
        words = bits.view(np.uint64).reshape(len(ids), -1) if len(ids) else bits
        self.columns = np.ascontiguousarray(words.T)
        self.stamp = stamp

    def nearest(self, vector: np.ndarray, *, count: int) -> list[int]:
        if not len(self.ids):
            return []
        if len(self.ids) <= count:
            return self.ids.tolist()
        query_words = np.packbits(vector > 0).view(np.uint64)
        distances = np.zeros(len(self.ids), dtype=np.uint16)
        for column, query_word in zip(self.columns, query_words, strict=True):
            distances += np.bitwise_count(column ^ query_word)
        best = np.argpartition(distances, count)[:count]
        return self.ids[best].tolist()


_vectors: dict[tuple[str, str], AgentVectors] = {}
_vectors_lock = threading.Lock()
# Agents whose vectors one process keeps; the least recently loaded goes first.
_VECTOR_CACHE_AGENTS = 16


def agent_vectors(*, agent_id: str, stamp: tuple) -> AgentVectors:
    """The Agent's vectors, reloaded when its documents or vectors changed (the stamp)."""
    key = (str(connection.settings_dict["NAME"]), agent_id)
    cached = _vectors.get(key)
    if cached is not None and cached.stamp == stamp:
        return cached
    with _vectors_lock:
        cached = _vectors.get(key)
        if cached is not None and cached.stamp == stamp:
            return cached
        loaded = _load_vectors(agent_id=agent_id, stamp=stamp)
        _vectors.pop(key, None)
        if len(_vectors) >= _VECTOR_CACHE_AGENTS:
            _vectors.pop(next(iter(_vectors)))
        _vectors[key] = loaded
        return loaded


def _load_vectors(*, agent_id: str, stamp: tuple) -> AgentVectors:
    width = embeddings.DIMENSIONS // 8
    with connection.cursor() as cursor:
        if is_postgres():
            # Two aggregated values instead of a million rows: the ids as big-endian int8s and
            # the bits end to end, in the same order.
            cursor.execute(
                "SELECT string_agg(int8send(id), ''::bytea ORDER BY id), "
                "string_agg(embedding_bits, ''::bytea ORDER BY id) "
                "FROM knowledge_chunk WHERE agent_id = %s AND is_searchable "
                "AND embedding_bits IS NOT NULL",
                [agent_id],
            )
            id_bytes, bit_bytes = cursor.fetchone()
            ids = np.frombuffer(bytes(id_bytes or b""), dtype=">i8").astype(np.int64)
            bits = np.frombuffer(bytes(bit_bytes or b""), dtype=np.uint8)
        else:
            cursor.execute(
                "SELECT id, embedding_bits FROM knowledge_chunk WHERE agent_id = %s "
                "AND is_searchable AND embedding_bits IS NOT NULL ORDER BY id",
                [agent_id],
            )
            rows = cursor.fetchall()
            ids = np.array([row[0] for row in rows], dtype=np.int64)
            bits = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=np.uint8)
    return AgentVectors(ids, bits.reshape(len(ids), width).copy(), stamp)


# --- the returned rows -----------------------------------------------------------------------

_POSTGRES_HITS_SQL = """
SELECT c.id, c.document_id, d.name, c.heading_path, c.position,
       ts_headline(c.search_config::regconfig, translate(c.text, '<>', %(brackets)s),
                   websearch_to_tsquery(c.search_config::regconfig, %(query)s), %(headline)s)
FROM knowledge_chunk c
JOIN knowledge_document d ON d.id = c.document_id
WHERE c.id = ANY(%(ids)s) AND c.agent_id = %(agent_id)s AND c.is_searchable
"""
_SQLITE_HITS_SQL = """
SELECT c.id, c.document_id, d.name, c.heading_path, c.position, substr(c.text, 1, 400)
FROM knowledge_chunk c
JOIN knowledge_document d ON d.id = c.document_id
WHERE c.id IN ({placeholders}) AND c.agent_id = %s AND c.is_searchable
"""
# ts_headline would strip anything that looks like a tag (`<!DOCTYPE html>` in a code block);
# angle brackets travel through it as look-alikes and are restored by render_snippet.
_BRACKET_STANDINS = "\u2039\u203a"
_HEADLINE_OPTIONS = (
    f"StartSel={_START}, StopSel={_STOP}, MaxWords=40, MinWords=15, "
    'ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "'
)


def _read_hits(*, agent_id: str, query: str, ids: list[int]) -> list[tuple]:
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute(
                _POSTGRES_HITS_SQL,
                {
                    "ids": ids,
                    "agent_id": agent_id,
                    "query": query,
                    "headline": _HEADLINE_OPTIONS,
                    "brackets": _BRACKET_STANDINS,
                },
            )
        else:
            sql = _SQLITE_HITS_SQL.format(placeholders=",".join(["%s"] * len(ids)))
            cursor.execute(sql, [*ids, agent_id])
        return cursor.fetchall()


def _plain_snippet(text: str | None) -> str:
    """The start of a chunk found by meaning alone (SQLite), escaped, cut at a word."""
    if not text:
        return ""
    text = snippet_text(text)
    if len(text) > 300:
        text = text[:300].rsplit(" ", 1)[0] + " …"
    return html.escape(text, quote=False)


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


def snippet_text(markdown: str) -> str:
    """A piece of a chunk's markdown as the words it reads as, on one line (what is dropped:
    the comment above ``_MARKDOWN_LINK``); the search markers pass through."""
    text = _MARKDOWN_LINK.sub(r"\1", markdown)
    if "|" in text:
        text = _TABLE_PIPES.sub(" · ", _TABLE_RULE.sub(" ", text))
    text = _INLINE_MARKUP.sub("", _HEADING_MARK.sub("", text))
    text = _SPACES.sub(" ", text).strip(" ·")
    return text


def render_snippet(raw: str | None) -> str:
    """The snippet's text without markdown syntax, escaped, the database's markers turned
    into <mark> tags."""
    if not raw:
        return ""
    if is_postgres():
        raw = raw.translate({ord(_BRACKET_STANDINS[0]): "<", ord(_BRACKET_STANDINS[1]): ">"})
    escaped = html.escape(snippet_text(raw), quote=False)
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
        try:
            loaded = json.loads(value)
        except ValueError:
            return []
        return loaded if isinstance(loaded, list) else []
    return []
