"""The query pipeline: read the query, gather each half's candidates, fuse them, score the
chosen passages and return them as hits (the package's docstring has the overview)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace

import numpy as np

from apps.common import lexical, metrics
from apps.knowledge import embeddings, relevance
from apps.knowledge.search.hits import SearchHit, build_hits, read_hits
from apps.knowledge.search.keyword import (
    STOP_WORD_CONFIGS,
    QueryTerms,
    keyword_candidates,
    query_terms,
)
from apps.knowledge.search.scoring import in_mode_order, reciprocal_rank_fusion, score_candidates
from apps.knowledge.search.semantic import semantic_candidates
from apps.knowledge.search.state import (
    AgentSearchState,
    agent_state,
    is_postgres,
    searchable_version,
)
from apps.workspaces.models import Agent

MODES = ("hybrid", "keyword", "semantic")
# Candidates each half contributes to the fusion.
CANDIDATES = 50
# Hybrid: how many of the fused list's first passages are ordered again by calibrated score.
RERANK_POOL = 30


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
    state = agent_state(agent.pk)
    if state.document_count == 0:
        return []
    version_id = None
    if document_id is not None:
        version_id = searchable_version(agent_id=agent.pk, document_id=document_id)
        if version_id is None:
            return []
    reading = read_query(query, agent_id=agent.pk, configs=state.configs)
    found = find_candidates(
        reading, mode=mode, state=state, agent_id=agent.pk, limit=limit, version_id=version_id
    )
    # Hybrid: the fused list's first RERANK_POOL are ordered again by their calibrated score,
    # which weighs how much of the query a passage holds against its best window's meaning
    # (measured on the calibration queries: paraphrases R@5 0.67 -> 1.00, half sentences 0.94 ->
    # 0.96, docs/knowledge.md); the other modes keep their own order.
    chosen = found.ranked_ids[: max(limit, RERANK_POOL) if mode == "hybrid" else limit]
    if not chosen:
        return []
    rows = {row[0]: row for row in read_hits(agent_id=agent.pk, terms=reading.readings, ids=chosen)}
    scored = score_candidates(
        chosen,
        rows,
        weights=reading.weights(),
        held_words=reading.held_words,
        similarities=found.similarities,
        vector=found.vector,
        script=reading.script,
        order_script=reading.order_script,
    )
    return build_hits(
        in_mode_order(scored, mode=mode)[:limit],
        min_score=min_score,
        shown_words=reading.shown_words,
        readings=reading.readings,
        keyword=found.keyword,
        semantic=found.semantic,
        ranked_ids=found.ranked_ids,
        fused=found.fused,
        database_snippets=found.snippets,
    )


# --- the query ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryReading:
    """The query as the search reads it."""

    text: str
    parsed: lexical.ParsedQuery  # its words without the stop words of its language and script
    terms: QueryTerms | None  # its index terms and their frequencies (None on SQLite)
    script: str  # relevance's class of the query: the curve its score comes from
    # Hybrid's order: the calibrated curve of the query's script. A foreign Latin-script query
    # is *scored* by coverage alone (relevance.query_class), but among its candidates the
    # closer in meaning still ranks first: ordering it by coverage alone lost answers the
    # similarity had found (relevance benchmark, main set: other-language R@5 0.68 -> 0.65).
    order_script: str
    # Highlighted and matched in a table row: the query's words, stop words aside ("to").
    shown_words: str
    readings: list[str] = field(default_factory=list)  # every index term of its words

    def weights(self) -> list[tuple[float, frozenset[str]]]:
        """Each query word's weight in coverage, with the index terms that read it."""
        return (
            self.terms.word_weights() if self.terms is not None else _uniform_weights(self.parsed)
        )

    def held_words(self, row: tuple) -> set[str]:
        """The query's terms a returned row holds (hits.read_hits)."""
        return set(row[8]) if self.terms is not None else _words_of(row[9] or row[6])


def read_query(query: str, *, agent_id: str, configs: list[str]) -> QueryReading:
    parsed = lexical.parse_query(query)
    # Stop words of scripts PostgreSQL keeps no list for (Arabic, Hindi, CJK pairs, ...) are
    # not looked up; the query's own language's stop list (when the detector is sure of it)
    # joins English's in telling them (keyword.query_terms).
    stop = lexical.query_stop_words(query)
    parsed = replace(parsed, words=lexical.content_words(parsed.words, stop))
    language = lexical.query_language(query) if relevance.script_of(query) == "latin" else None
    stop_configs = set(STOP_WORD_CONFIGS)
    if language and language[1] >= relevance.FOREIGN_MIN_PROBABILITY:
        stop_configs.add(lexical.LANGUAGE_CONFIGS.get(language[0], "english"))
    terms = (
        query_terms(
            agent_id=agent_id, words=parsed.words, configs=configs, stop_configs=stop_configs
        )
        if is_postgres() and not parsed.is_empty
        else None
    )
    return QueryReading(
        text=query,
        parsed=parsed,
        terms=terms,
        script=relevance.query_class(query, language=language),
        order_script=relevance.script_of(query),
        shown_words=lexical.content_words(parsed.words, lexical.ENGLISH_STOP_WORDS | stop),
        readings=sorted(
            {term for readings in (terms.readings.values() if terms else ()) for term in readings}
        ),
    )


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


# --- the candidates ------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidates:
    """Each half's candidates and the mode's order of them."""

    keyword: list[int]  # chunk ids, best first
    semantic: list[int]
    similarities: dict[int, float]  # the semantic half's, by chunk id
    snippets: dict[int, str]  # SQLite's highlighted snippets, by chunk id
    fused: dict[int, float]  # hybrid: reciprocal rank fusion's value, by chunk id
    ranked_ids: list[int]  # the mode's order
    vector: np.ndarray | None  # the query's embedding, when the semantic half ran


def find_candidates(
    reading: QueryReading,
    *,
    mode: str,
    state: AgentSearchState,
    agent_id: str,
    limit: int,
    version_id: str | None,
) -> Candidates:
    pool = max(CANDIDATES, limit)
    keyword: list[int] = []
    snippets: dict[int, str] = {}
    order: dict[int, float] = {}
    if mode in ("hybrid", "keyword") and (reading.terms is not None or not is_postgres()):
        ranked = keyword_candidates(
            agent_id=agent_id,
            query=reading.text,
            terms=reading.terms,
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
        vector = embeddings.embed_query(reading.text)
        ranked = semantic_candidates(
            agent_id=agent_id, vector=vector, state=state, limit=pool, version_id=version_id
        )
        semantic = [chunk_id for chunk_id, _ in ranked]
        similarities = dict(ranked)
        if mode == "semantic":
            order = dict(ranked)
    fused: dict[int, float] = {}
    if mode == "hybrid":
        order = fused = reciprocal_rank_fusion([keyword, semantic])
    return Candidates(
        keyword=keyword,
        semantic=semantic,
        similarities=similarities,
        snippets=snippets,
        fused=fused,
        ranked_ids=sorted(order, key=lambda chunk_id: (-order[chunk_id], chunk_id)),
        vector=vector,
    )
