"""The semantic half of search: the passages nearest the query's meaning.

The query is embedded by the same model as the chunks (apps.knowledge.embeddings). With
pgvector: an HNSW index ordered by cosine distance. Without it (Debian 12, SQLite): an
in-process array of every embedded chunk's sign bits per Agent, compared by Hamming distance to
pick VECTOR_PREFILTER candidates, whose float16 vectors are then read and scored exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from apps.knowledge import embeddings
from apps.knowledge.search.state import AgentSearchState, is_postgres

# Chunks whose exact vectors are read after the sign-bit scan (the scan's shortlist).
VECTOR_PREFILTER = 400
# Chunks the HNSW index proposes (by their summary vector) to be scored by their best window.
HNSW_SHORTLIST = 100


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


def semantic_candidates(
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
