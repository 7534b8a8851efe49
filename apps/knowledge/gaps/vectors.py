"""A question's vector as the grouping stores and compares it (apps.knowledge.gaps.clustering):
its embedding from the packaged model and, for a question in a language other than English,
its stems as the database's text search gives them (the same stemming and stop words as the
keyword search of that language). SQLite has no stemmer: there the words are lower-cased only.
"""

from __future__ import annotations

import re

import numpy as np
from django.db import connection

from apps.knowledge.gaps import clustering

EMBED_BATCH = 32
_WORD = re.compile(r"[^\W\d_]+")


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def vector_from_bytes(data: bytes | memoryview) -> np.ndarray:
    """A stored vector, as long as the grouping's vectors now are (clustering.padded)."""
    return clustering.padded(np.frombuffer(bytes(data), dtype="<f4"))


def question_vectors(texts: list[str]) -> tuple[np.ndarray, list[float]]:
    """Each text's vector and the similarity at which it joins a group."""
    embeddings = np.concatenate(
        [_embed(texts[start : start + EMBED_BATCH]) for start in range(0, len(texts), EMBED_BATCH)]
    )
    stems = question_stems(texts)
    vectors = np.stack(
        [clustering.question_vector(e, s) for e, s in zip(embeddings, stems, strict=True)]
    )
    return vectors, [clustering.threshold_for(s) for s in stems]


def question_stems(texts: list[str]) -> list[list[str] | None]:
    """The stems of each text in a language other than English (None for the rest)."""
    configs = [clustering.foreign_config(text) for text in texts]
    foreign = [(i, config, texts[i]) for i, config in enumerate(configs) if config]
    stems: list[list[str] | None] = [None] * len(texts)
    if not foreign:
        return stems
    if connection.vendor != "postgresql":
        for i, _config, text in foreign:
            stems[i] = _WORD.findall(text.lower())
        return stems
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.n, ARRAY(SELECT lexeme FROM unnest(to_tsvector(t.config::regconfig, t.text)))"
            " FROM unnest(%s::int[], %s::text[], %s::text[]) AS t(n, config, text)",
            [[i for i, _, _ in foreign], [c for _, c, _ in foreign], [t for _, _, t in foreign]],
        )
        for i, lexemes in cursor.fetchall():
            stems[i] = list(lexemes)
    return stems


def _embed(texts: list[str]) -> np.ndarray:
    from apps.knowledge.embeddings import embed_texts

    return embed_texts(texts)
