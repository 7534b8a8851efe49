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
import math
import re
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from apps.common import lexical, metrics
from apps.knowledge import embeddings, relevance
from apps.workspaces.models import Agent

MODES = ("hybrid", "keyword", "semantic")
# Candidates each half contributes to the fusion.
CANDIDATES = 50
# Rows a keyword query ranks at most: beyond it a term is too common to rank every match, and
# the first matches found stand in for the rest (the semantic half still orders by meaning).
# Twice the most candidates a half gives (CANDIDATES, or a limit of 50): at a million chunks, a
# pair of words held by one chunk in ten costs 10 ms of CPU to rank 100 of them, 24 ms for 300.
KEYWORD_CANDIDATE_CAP = 100
# Chunks whose exact vectors are read after the sign-bit scan (the scan's shortlist).
VECTOR_PREFILTER = 400
# Chunks the HNSW index proposes (by their summary vector) to be scored by their best window.
HNSW_SHORTLIST = 100
RRF_K = 60
# Hybrid: how many of the fused list's first passages are ordered again by calibrated score.
RERANK_POOL = 30

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


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


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


@metrics.timed(metrics.SEARCH_DURATION, mode="mode")
def search_chunks(
    *,
    agent: Agent,
    query: str,
    limit: int,
    mode: str = "hybrid",
    min_score: float = 0.0,
    document_id: str | None = None,
) -> list[SearchHit]:
    """The `limit` best chunks for the query among the Agent's searchable chunks, in the mode's
    order (BM25, best window's cosine, or reciprocal rank fusion of both), without those whose
    calibrated relevance is under `min_score`. With `document_id`, the same retrieval restricted
    to that document's passages (term statistics and calibration stay the Agent's)."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}")
    state = _agent_state(agent.pk)
    if state.document_count == 0:
        return []
    version_id = None
    if document_id is not None:
        version_id = _searchable_version(agent_id=agent.pk, document_id=document_id)
        if version_id is None:
            return []
    parsed = lexical.parse_query(query)
    # Stop words of scripts PostgreSQL keeps no list for (Arabic, Hindi, CJK pairs, ...) are
    # not looked up; the query's own language's stop list (when the detector is sure of it)
    # joins English's in telling them (_query_terms).
    stop = lexical.query_stop_words(query)
    parsed = replace(parsed, words=lexical.content_words(parsed.words, stop))
    language = lexical.query_language(query) if relevance.script_of(query) == "latin" else None
    stop_configs = set(_STOP_WORD_CONFIGS)
    if language and language[1] >= relevance.FOREIGN_MIN_PROBABILITY:
        stop_configs.add(lexical.LANGUAGE_CONFIGS.get(language[0], "english"))
    terms = (
        _query_terms(
            agent_id=agent.pk, words=parsed.words, configs=state.configs, stop_configs=stop_configs
        )
        if is_postgres() and not parsed.is_empty
        else None
    )
    pool = max(CANDIDATES, limit)
    keyword: list[int] = []
    snippets: dict[int, str] = {}
    order: dict[int, float] = {}
    if mode in ("hybrid", "keyword") and (terms is not None or not is_postgres()):
        ranked = _keyword_candidates(
            agent_id=agent.pk,
            query=query,
            terms=terms,
            configs=state.configs,
            limit=pool,
            version_id=version_id,
        )
        keyword = [row[0] for row in ranked]
        order.update((row[0], float(row[1])) for row in ranked)
        snippets.update((row[0], row[2]) for row in ranked if len(row) > 2)
    semantic: list[int] = []
    similarities: dict[int, float] = {}
    vector = None
    if mode in ("hybrid", "semantic") and state.embedded_count:
        vector = embeddings.embed_query(query)
        ranked = _semantic_candidates(
            agent_id=agent.pk, vector=vector, state=state, limit=pool, version_id=version_id
        )
        semantic = [chunk_id for chunk_id, _ in ranked]
        similarities = dict(ranked)
        if mode == "semantic":
            order = dict(ranked)
    fused: dict[int, float] = {}
    if mode == "hybrid":
        order = fused = reciprocal_rank_fusion([keyword, semantic])
    ranked_ids = sorted(order, key=lambda chunk_id: (-order[chunk_id], chunk_id))
    # Hybrid: the fused list's first RERANK_POOL are ordered again by their calibrated score,
    # which weighs how much of the query a passage holds against its best window's meaning
    # (measured on the calibration queries: paraphrases R@5 0.67 -> 1.00, half sentences 0.94 ->
    # 0.96, docs/knowledge.md); the other modes keep their own order.
    chosen = ranked_ids[: max(limit, RERANK_POOL) if mode == "hybrid" else limit]
    if not chosen:
        return []
    readings = sorted(
        {term for terms in (terms.readings.values() if terms else ()) for term in terms}
    )
    rows = {row[0]: row for row in _read_hits(agent_id=agent.pk, terms=readings, ids=chosen)}
    weights = terms.word_weights() if terms is not None else _uniform_weights(parsed)
    script = relevance.query_class(query, language=language)
    # Highlighted and matched in a table row: the query's words, stop words aside ("to").
    shown_words = lexical.content_words(parsed.words, lexical.ENGLISH_STOP_WORDS | stop)
    # Hybrid's order: the calibrated curve of the query's script. A foreign Latin-script query
    # is *scored* by coverage alone (relevance.query_class), but among its candidates the
    # closer in meaning still ranks first: ordering it by coverage alone lost answers the
    # similarity had found (relevance benchmark, main set: other-language R@5 0.68 -> 0.65).
    order_script = relevance.script_of(query)
    scored = []
    for place, chunk_id in enumerate(chosen):
        row = rows.get(chunk_id)
        if row is None:  # deleted or disabled between the two queries
            continue
        held = set(row[8]) if terms is not None else _words_of(row[9] or row[6])
        covered = relevance.coverage(weights=weights, held=held)
        similarity = similarities.get(chunk_id)
        stored, made_by = row[10], row[11]
        if similarity is None and vector is not None and stored and embeddings.comparable(made_by):
            similarity = float(embeddings.best_window_scores(vector, [bytes(stored)])[0])
        score = relevance.score(
            coverage=covered, similarity=similarity if vector is not None else None, script=script
        )
        ordered_by = score
        if order_script != script and vector is not None:
            ordered_by = relevance.score(
                coverage=covered, similarity=similarity, script=order_script
            )
        contents = relevance.is_contents_page(row[6] or "", _json_list(row[3]))
        if contents:
            score = round(score * relevance.CONTENTS_FACTOR, 4)
            ordered_by *= relevance.CONTENTS_FACTOR
        scored.append((place, chunk_id, row, covered, similarity, score, ordered_by, contents))
    if mode == "hybrid":
        scored.sort(key=lambda item: relevance.order_key(item[6], place=item[0]))
    else:  # the mode's own order, a contents page after the sections it points to
        scored.sort(key=lambda item: item[0] + (relevance.CONTENTS_DEMOTION if item[7] else 0))
    keyword_ranks = {chunk_id: rank for rank, chunk_id in enumerate(keyword, start=1)}
    semantic_ranks = {chunk_id: rank for rank, chunk_id in enumerate(semantic, start=1)}
    fused_ranks = (
        {chunk_id: rank for rank, chunk_id in enumerate(ranked_ids, start=1)} if fused else {}
    )
    hits = []
    for _, chunk_id, row, covered, similarity, score, _, contents in scored[:limit]:
        if score < min_score:
            continue
        text, bigrammed = row[6], row[7]
        if is_postgres() or bigrammed:
            # Marked here rather than by ts_headline, which parses every returned passage again
            # (1 ms each): the query's words and index terms, stems as prefixes.
            raw = (
                lexical.highlight(text, shown_words, stems=readings)
                if keyword or bigrammed
                else None
            )
        else:
            raw = snippets.get(chunk_id)
        table = table_snippet(text, marked=_marked_words(raw) | set(shown_words.split()))
        if table is not None:  # the row that matched, under its header
            snippet = render_snippet(table)
        else:
            snippet = render_snippet(raw) if raw else _plain_snippet(text)
        hits.append(
            SearchHit(
                chunk_id=chunk_id,
                document_id=row[1],
                document_name=row[2],
                heading_path=[plain_heading(heading) for heading in _json_list(row[3])],
                position=row[4],
                snippet=snippet,
                score=score,
                text=text,
                keyword_rank=keyword_ranks.get(chunk_id),
                semantic_rank=semantic_ranks.get(chunk_id),
                coverage=round(covered, 4),
                similarity=None if similarity is None else round(similarity, 4),
                fused=round(fused[chunk_id], 6) if chunk_id in fused else None,
                contents_page=contents,
                fused_rank=fused_ranks.get(chunk_id),
            )
        )
    return hits


def _uniform_weights(parsed: lexical.ParsedQuery) -> list[tuple[float, frozenset[str]]]:
    """SQLite's coverage weights: every distinct query word alike (FTS5 keeps no per-Agent
    frequencies), as the FTS tokenizer reads it (lower case, no diacritics)."""
    return [(1.0, frozenset({word})) for word in dict.fromkeys(_words_of(parsed.words))]


def _words_of(text: str) -> set[str]:
    """Words as SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer indexes them."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(character for character in folded if not unicodedata.combining(character))
    return set(_WORDS.findall(stripped))


_WORDS = re.compile(r"\w+")


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
    configs: list[str]  # text search configurations of the Agent's ready passages
    document_count: int
    embedded_count: int
    stamp: tuple  # changes whenever the Agent's documents or their vectors change


def _agent_state(agent_id: str) -> AgentSearchState:
    if is_postgres():
        sql = (
            "SELECT coalesce(string_agg(DISTINCT search_configs, ','), ''), count(*), "
            "coalesce(sum(embedded_chunk_count), 0), max(updated_at) "
            "FROM knowledge_document WHERE agent_id = %s AND status = 'ready'"
        )
    else:
        sql = (
            "SELECT coalesce(group_concat(DISTINCT search_configs), ''), count(*), "
            "coalesce(sum(embedded_chunk_count), 0), max(updated_at) "
            "FROM knowledge_document WHERE agent_id = %s AND status = 'ready'"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent_id])
        languages, documents, embedded, changed = cursor.fetchone()
    configs = sorted({name for name in languages.split(",") if name in lexical.SEARCH_CONFIGS})
    return AgentSearchState(
        configs=configs or ["simple"],
        document_count=documents,
        embedded_count=embedded,
        stamp=(documents, embedded, str(changed)),
    )


def _searchable_version(*, agent_id: str, document_id: str) -> str | None:
    """The current version of one of the Agent's documents when the Agent searches it (ready
    and enabled): its chunks are the ones a search restricted to the document reads (the
    (version, position) index finds them)."""
    from apps.knowledge.models import KnowledgeDocument

    return (
        KnowledgeDocument.objects.filter(
            pk=document_id, agent_id=agent_id, status="ready", is_enabled=True
        )
        .values_list("current_version_id", flat=True)
        .first()
    )


# --- keyword half ----------------------------------------------------------------------------

# BM25's parameters (the usual ones: Lucene's, Elasticsearch's, rank_bm25's).
BM25_K1 = 1.2
BM25_B = 0.75
# Query terms rarer than this, together, are matched exhaustively (every chunk holding one of
# them is ranked); the others are "common": of the chunks holding all of them, at most
# KEYWORD_CANDIDATE_CAP are ranked too. A chunk holding only a common term of a query that has
# rarer ones would rank below those anyway.
KEYWORD_EXACT_BUDGET = 2000
# Configurations whose stop lists tell a stop word of the query in "simple" text (which keeps
# every word): English always, plus the languages of the Agent's passages.
_STOP_WORD_CONFIGS = ("english",)


@dataclass(frozen=True)
class QueryTerms:
    """The query's index terms with their document frequencies, and BM25's collection size."""

    frequencies: dict[str, int]  # term -> searchable chunks of the Agent holding it
    chunk_count: int
    average_length: float  # distinct terms per chunk
    # Query word (its position) -> its readings: one term per configuration that kept it.
    readings: dict[int, frozenset[str]] = field(default_factory=dict)

    def _idf(self, found: int) -> float:
        total = max(self.chunk_count, 1)
        return math.log(1 + (total - found + 0.5) / (found + 0.5))

    def word_weights(self) -> list[tuple[float, frozenset[str]]]:
        """Each query word's weight for `relevance.coverage`: the idf of its rarest reading (a
        word no passage holds weighs most), with its readings."""
        return [
            (max(self._idf(self.frequencies.get(term, 0)) for term in terms), terms)
            for terms in self.readings.values()
            if terms
        ]

    def weights(self) -> dict[str, float]:
        """BM25's idf of each term found in at least one chunk."""
        return {term: self._idf(found) for term, found in self.frequencies.items() if found > 0}


def _tsquery_literal(terms, operator: str) -> str:
    """Index terms as a tsquery constant ('a' | 'b'): already normalised, so no parser runs."""
    quoted = ("'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)
    return f" {operator} ".join(quoted)


_POSTGRES_TERMS_SQL = """
SELECT q.config, q.lexeme, q.positions, coalesce(t.chunks, 0)::bigint, NULL::bigint
FROM unnest(%(configs)s::text[]) AS q0(config)
CROSS JOIN LATERAL (
    SELECT q0.config, v.lexeme, v.positions
    FROM unnest(to_tsvector(q0.config::regconfig, %(words)s)) AS v
) q
LEFT JOIN knowledge_term t ON t.agent_id = %(agent_id)s AND t.term = q.lexeme
UNION ALL
SELECT NULL, NULL, NULL, coalesce(sum(chunks), 0)::bigint, coalesce(sum(lexemes), 0)::bigint
FROM knowledge_term_total WHERE agent_id = %(agent_id)s
"""


def _query_terms(
    *, agent_id: str, words: str, configs: list[str], stop_configs=_STOP_WORD_CONFIGS
) -> QueryTerms:
    """Parse the query's words with each of the Agent's configurations (and English and the
    query's language, for their stop words) and read each term's document frequency, in one
    query."""
    parse = sorted(set(configs) | set(stop_configs))
    with connection.cursor() as cursor:
        cursor.execute(
            _POSTGRES_TERMS_SQL, {"configs": parse, "words": words, "agent_id": agent_id}
        )
        rows = cursor.fetchall()
    chunk_count, lexeme_count = int(rows[-1][3]), int(rows[-1][4])
    kept: dict[str, set[int]] = {}  # configuration -> positions of the query it kept
    for config, _, positions, _, _ in rows[:-1]:
        kept.setdefault(config, set()).update(positions or ())
    # "simple" keeps every word; a position that a language's stop list dropped is a stop word
    # (English's, or one of the Agent's languages').
    every = kept.get("simple", set()) | {p for positions in kept.values() for p in positions}
    stop = {
        position
        for position in every
        if any(position not in kept.get(config, set()) for config in parse if config != "simple")
    }
    frequencies: dict[str, int] = {}
    fallback: dict[str, int] = {}
    readings: dict[int, set[str]] = {}
    stop_readings: dict[int, set[str]] = {}
    for config, lexeme, positions, found, _ in rows[:-1]:
        if config not in configs:
            continue
        # A stop word of one language is dropped from every reading of the query: German
        # reads "and" as a word, and its lexeme would match English stems ("ande" -> "and").
        if set(positions or ()) <= stop:
            fallback[lexeme] = found
            for position in positions or ():
                stop_readings.setdefault(position, set()).add(lexeme)
            continue
        frequencies[lexeme] = found
        for position in positions or ():
            if position not in stop:
                readings.setdefault(position, set()).add(lexeme)
    if not frequencies:  # a query of stop words only: they are all it has
        frequencies, readings = fallback, stop_readings
    return QueryTerms(
        frequencies=frequencies,
        chunk_count=chunk_count,
        average_length=lexeme_count / chunk_count if chunk_count else 1.0,
        readings={position: frozenset(terms) for position, terms in readings.items()},
    )


def spent_on(terms: list[str], statistics: QueryTerms) -> int:
    """How many chunks hold at least one of the terms, at most (frequencies add up)."""
    return sum(statistics.frequencies[term] for term in terms)


def _postgres_keyword(
    *,
    agent_id: str,
    parsed: lexical.ParsedQuery,
    terms: QueryTerms,
    configs: list[str],
    limit: int,
    version_id: str | None = None,
) -> list[tuple[int, float]]:
    """BM25 over the Agent's searchable chunks (or one version's): (chunk id, score) best
    first."""
    weights = terms.weights()
    if parsed.is_empty or not weights:
        return []
    by_rarity = sorted(weights, key=lambda term: (terms.frequencies[term], term))
    rare: list[str] = []
    spent = 0
    for term in by_rarity:  # the rarest first, while their matches fit the budget
        spent += terms.frequencies[term]
        if spent > KEYWORD_EXACT_BUDGET:
            break
        rare.append(term)
    common = by_rarity[len(rare) :]
    if spent_on(rare, terms) >= limit and version_id is None:
        # The rarer terms alone fill the answer: a chunk holding only common ones ranks below.
        # (Their matches are counted over the whole Agent: one document may hold fewer.)
        common = []
    # Phrases must appear and excluded words must not, in the chunk's own configuration:
    # written inline with constant configuration names (SEARCH_CONFIGS only) so the planner
    # folds them into constant tsqueries.
    filters = []
    params: dict[str, Any] = {
        "agent_id": agent_id,
        "terms": list(weights),
        "idfs": list(weights.values()),
        "k1": BM25_K1,
        "b": BM25_B,
        "average": max(terms.average_length, 1.0),
        "limit": limit,
    }
    if version_id is not None:
        params["version_id"] = version_id
        filters.append("AND version_id = %(version_id)s")
    safe = [name for name in configs if name in lexical.SEARCH_CONFIGS]
    for index, phrase in enumerate(parsed.phrases):
        params[f"phrase{index}"] = phrase
        either = " || ".join(f"phraseto_tsquery('{name}', %(phrase{index})s)" for name in safe)
        filters.append(f"AND search_vector @@ ({either})")
    for index, word in enumerate(parsed.excluded):
        params[f"excluded{index}"] = word
        either = " || ".join(f"plainto_tsquery('{name}', %(excluded{index})s)" for name in safe)
        filters.append(f"AND NOT search_vector @@ ({either})")
    branches = []
    if rare:
        params["rare"] = _tsquery_literal(rare, "|")
        params["rare_cap"] = KEYWORD_EXACT_BUDGET * 2  # frequencies may lag a running ingestion
        branches.append("search_vector @@ %(rare)s::tsquery {filters} LIMIT %(rare_cap)s")
    if common:
        params["common"] = _tsquery_literal(common, "&")
        # Beside rarer terms, chunks holding only the common ones just fill the answer up.
        params["cap"] = limit if rare else KEYWORD_CANDIDATE_CAP
        branches.append("search_vector @@ %(common)s::tsquery {filters} LIMIT %(cap)s")
    candidates = " UNION ALL ".join(
        "(SELECT id, search_vector FROM knowledge_chunk "  # noqa: S608 - fixed SQL, constant names
        "WHERE agent_id = %(agent_id)s AND is_searchable AND "
        + branch.format(filters=" ".join(filters))
        + ")"
        for branch in branches
    )
    sql = _POSTGRES_BM25_SQL.format(candidates=candidates)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


# Each candidate's BM25: for every query term it holds, idf * tf * (k1 + 1) / (tf + k1 * (1 - b
# + b * length / average length)); tf is the term's number of positions in the chunk, length its
# number of distinct terms (what a tsvector knows without reading the text).
_POSTGRES_BM25_SQL = """
WITH terms(term, idf) AS (SELECT * FROM unnest(%(terms)s::text[], %(idfs)s::float8[])),
candidates AS ({candidates})
SELECT DISTINCT c.id, (
    SELECT sum(t.idf * tf.n * (%(k1)s + 1) / (tf.n + %(k1)s * (1 - %(b)s + %(b)s
               * length(c.search_vector) / %(average)s)))
    FROM unnest(c.search_vector) AS v
    JOIN terms t ON t.term = v.lexeme
    CROSS JOIN LATERAL (SELECT greatest(coalesce(cardinality(v.positions), 1), 1)::float8 AS n) tf
) AS score
FROM candidates c
ORDER BY score DESC, c.id
LIMIT %(limit)s
"""


def _keyword_candidates(
    *,
    agent_id: str,
    query: str,
    terms: QueryTerms | None,
    configs: list[str],
    limit: int,
    version_id: str | None = None,
) -> list[tuple]:
    """(chunk id, score[, raw snippet on SQLite]) of the best keyword matches, best first."""
    if terms is None:  # SQLite
        expression = lexical.fts5_expression(query)
        if not expression:
            return []
        with connection.cursor() as cursor:
            cursor.execute(
                _SQLITE_KEYWORD_SQL, [expression, agent_id, version_id, version_id, limit]
            )
            return cursor.fetchall()
    return _postgres_keyword(
        agent_id=agent_id,
        parsed=lexical.parse_query(query),
        terms=terms,
        configs=configs,
        limit=limit,
        version_id=version_id,
    )


_SQLITE_KEYWORD_SQL = """
SELECT c.id, -bm25(knowledge_chunk_fts) AS score,
       snippet(knowledge_chunk_fts, 0, char(2), char(3), ' … ', 32) AS snippet
FROM knowledge_chunk_fts
JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid
WHERE knowledge_chunk_fts MATCH %s
  AND c.agent_id = %s
  AND c.is_searchable
  AND (%s IS NULL OR c.version_id = %s)
ORDER BY bm25(knowledge_chunk_fts), c.id
LIMIT %s
"""


# --- semantic half ---------------------------------------------------------------------------


@contextmanager
def hnsw_scans_until_enough() -> Iterator[None]:
    """Behind a transaction pooler, a transaction with the iterative HNSW scan
    (apps.knowledge.apps) set for it alone; without one, each connection has it set already
    and nothing is added."""
    if settings.DATABASE_POOLER != "transaction":
        yield
        return
    with transaction.atomic():
        # A pgvector older than 0.8 has no iterative scans: it keeps its default.
        with suppress(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        yield


def _semantic_candidates(
    *,
    agent_id: str,
    vector: np.ndarray,
    state: AgentSearchState,
    limit: int,
    version_id: str | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, similarity) of the chunks nearest the query's meaning, best first.

    A chunk's similarity is its best window's cosine with the query. The index (HNSW, or the
    sign-bit scan without pgvector) compares the query with each chunk's summary vector (the
    mean of its windows) to shortlist candidates; their windows are then read and scored.
    Restricted to one version (a document), the shortlist comes from a scan of that version's
    sign bits (HNSW would filter after its walk and could find none of them).
    """
    if version_id is not None:
        rows = _shortlist_rows(
            agent_id=agent_id,
            shortlist=_version_vectors(version_id).nearest(vector, count=VECTOR_PREFILTER),
        )
    elif embeddings.pgvector_enabled():
        with hnsw_scans_until_enough(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, embedding, embedding_model FROM knowledge_chunk "
                "WHERE agent_id = %(agent_id)s AND is_searchable "
                "AND embedding_vector IS NOT NULL "
                "ORDER BY embedding_vector <=> %(vector)s::vector LIMIT %(limit)s",
                {
                    "vector": embeddings.vector_literal(vector),
                    "agent_id": agent_id,
                    "limit": max(limit, HNSW_SHORTLIST),
                },
            )
            rows = cursor.fetchall()
    else:
        shortlist = agent_vectors(agent_id=agent_id, stamp=state.stamp).nearest(
            vector, count=VECTOR_PREFILTER
        )
        rows = _shortlist_rows(agent_id=agent_id, shortlist=shortlist)
    # Vectors of another model (until `knowledge_reembed` reaches them) mean nothing here.
    rows = [row for row in rows if embeddings.comparable(row[2])]
    if not rows:
        return []
    similarities = embeddings.best_window_scores(vector, [bytes(row[1]) for row in rows])
    order = np.argsort(-similarities, kind="stable")[:limit]
    return [(rows[index][0], float(similarities[index])) for index in order]


def _shortlist_rows(*, agent_id: str, shortlist: list[int]) -> list[tuple]:
    """(id, windows, model key) of the shortlisted chunks still searchable."""
    if not shortlist:
        return []
    placeholders = ",".join(["%s"] * len(shortlist))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding, embedding_model FROM knowledge_chunk "  # noqa: S608
            f"WHERE id IN ({placeholders}) AND agent_id = %s AND is_searchable "
            "AND embedding IS NOT NULL",
            [*shortlist, agent_id],
        )
        return cursor.fetchall()


def _version_vectors(version_id: str) -> AgentVectors:
    """The sign bits of one version's embedded chunks (a document's), read for one search."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding_bits FROM knowledge_chunk WHERE version_id = %s "
            "AND is_searchable AND embedding_bits IS NOT NULL ORDER BY id",
            [version_id],
        )
        rows = cursor.fetchall()
    return _vectors_of(rows, stamp=())


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
            return _vectors_of(cursor.fetchall(), stamp=stamp)
    return AgentVectors(ids, bits.reshape(len(ids), width).copy(), stamp)


def _vectors_of(rows: list[tuple], *, stamp: tuple) -> AgentVectors:
    """AgentVectors of (id, sign bits) rows."""
    ids = np.array([row[0] for row in rows], dtype=np.int64)
    bits = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=np.uint8)
    return AgentVectors(ids, bits.reshape(len(ids), embeddings.DIMENSIONS // 8).copy(), stamp)


# --- the returned rows -----------------------------------------------------------------------

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


def _read_hits(*, agent_id: str, terms: list[str], ids: list[int]) -> list[tuple]:
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


def _plain_snippet(text: str | None) -> str:
    """The start of a chunk found by meaning alone (SQLite), escaped, cut at a word."""
    if not text:
        return ""
    text = snippet_text(text)
    if len(text) > 300:
        text = text[:300].rsplit(" ", 1)[0] + " …"
    return html.escape(text, quote=False)


def snippet_text(markdown: str) -> str:
    """A piece of a chunk's markdown as the words it reads as, on one line (what is dropped:
    the comment above ``_MARKDOWN_LINK``); the search markers pass through."""
    text = _MARKDOWN_LINK.sub(r"\1", markdown)
    if "|" in text:
        text = _TABLE_PIPES.sub(" · ", _TABLE_RULE.sub(" ", text))
    text = _INLINE_MARKUP.sub("", _HEADING_MARK.sub("", text))
    text = _SPACES.sub(" ", text).strip(" ·")
    return text


_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_MARKED = re.compile("\x02([^\x02\x03]*)\x03")


def _marked_words(raw: str | None) -> set[str]:
    """The words the database marked in its snippet (the passage's own spelling)."""
    return {word.casefold() for word in _MARKED.findall(raw or "")}


def table_snippet(text: str, *, marked: set[str]) -> str | None:
    """For a passage holding a markdown table: its best row as "header: cell" pairs, the
    matched words between markers ("Method: \x02Card\x03 · Delay: 3-5 days"): the row with the
    most matched words, else the first. None when the passage has no table."""
    lines = text.splitlines()
    for start, line in enumerate(lines[:-1]):
        if _TABLE_LINE.match(line) and _TABLE_RULE.fullmatch(lines[start + 1].strip()):
            break
    else:
        return None
    header = _cells(lines[start])
    rows = []
    for line in lines[start + 2 :]:
        if not _TABLE_LINE.match(line):
            break
        rows.append(_cells(line))
    if not rows:
        return None
    wanted = {word.casefold() for word in marked if word}

    def hits(cells: list[str]) -> int:
        words = {word.casefold() for cell in cells for word in _WORDS.findall(cell)}
        return len(words & wanted)

    best = max(rows, key=hits)  # the first of the best: max keeps the earliest
    pairs = []
    for index, cell in enumerate(best):
        name = header[index] if index < len(header) and header[index] else ""
        pairs.append(f"{name}: {_mark(cell, wanted)}" if name else _mark(cell, wanted))
    return " · ".join(pairs)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _mark(cell: str, wanted: set[str]) -> str:
    if not wanted:
        return cell
    return _WORDS.sub(
        lambda match: (
            f"\x02{match.group(0)}\x03" if match.group(0).casefold() in wanted else match.group(0)
        ),
        cell,
    )


def plain_heading(heading: str) -> str:
    """A heading as text: a link keeps its text, emphasis and code marks go."""
    text = _INLINE_MARKUP.sub("", _MARKDOWN_LINK.sub(r"\1", heading))
    return _SPACES.sub(" ", text).strip()


def render_snippet(raw: str | None) -> str:
    """The snippet's text without markdown syntax, escaped, the database's markers turned
    into <mark> tags."""
    if not raw:
        return ""
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
