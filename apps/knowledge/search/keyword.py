"""The keyword half of search: BM25 over the Agent's passages.

PostgreSQL: each chunk's `search_vector` is `to_tsvector(search_config, text)` (written by a
trigger; `search_config` is its document's language, detected at ingestion, `simple` for CJK and
anything unrecognised). The query is parsed with every configuration the Agent's documents use
and the results ORed, so one query finds stemmed English ("refunds" -> "refund") and
word-for-word Chinese alike. The matching rows come from a partial GIN index on (agent_id,
search_vector) WHERE is_searchable; at most KEYWORD_CANDIDATE_CAP of them are ranked, so a word
found in half a million chunks costs a bounded amount. SQLite: an FTS5 table (one tokenizer for
every language, no stemming).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from apps.common import lexical

# Rows a keyword query ranks at most: beyond it a term is too common to rank every match, and
# the first matches found stand in for the rest (the semantic half still orders by meaning).
# Twice the most candidates a half gives (CANDIDATES, or a limit of 50): at a million chunks, a
# pair of words held by one chunk in ten costs 10 ms of CPU to rank 100 of them, 24 ms for 300.
KEYWORD_CANDIDATE_CAP = 100

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
STOP_WORD_CONFIGS = ("english",)


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


def query_terms(
    *, agent_id: str, words: str, configs: list[str], stop_configs=STOP_WORD_CONFIGS
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


def keyword_candidates(
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
