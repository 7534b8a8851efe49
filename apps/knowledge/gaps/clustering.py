"""Grouping questions by meaning, incrementally: a question joins the group whose centroid is
nearest when the similarity reaches its threshold, else it starts a group of its own.

A question's vector has two parts. The first is its embedding (the packaged all-MiniLM-L6-v2,
which reads English). The second, for a question the language detector confidently gives
another language, is its words: the hashed character 4-grams of its stems (as the database's
text search stems that language), so inflected forms of one word still meet. The English
model places every French question near every other French one (on the held-out set, all
French questions fell in one group): for those questions the embedding carries little beyond
the language, so their vector leans on their words (FOREIGN_EMBEDDING_WEIGHT) and they join at
FOREIGN_THRESHOLD. An English question (or one the detector is unsure of) keeps its embedding
alone and joins at GROUP_THRESHOLD, as before. The two parts are unit vectors, so a question's
similarity to a group is the weighted sum of the two cosines, each part of the group's centroid
normalised on its own (`Centroids.similarity`); a question of another language meets a group
through the embedding part only, weakened.

A group's centroid is the sum of its distinct questions' vectors (kept as the sum, so adding a
question is one vector addition and nothing is ever recomputed). Questions are taken in the
order they were first asked, so a group never moves once a question joined it. Vectors stored
before the words part existed are read as having none (`padded`).

GROUP_THRESHOLD was chosen on the development questions of benchmarks/knowledge_gap_questions.json;
the foreign weight and threshold on benchmarks/knowledge_gap_questions_multilingual.json. Both
are measured on sets they were not chosen on (docs/knowledge.md, "Unanswered questions").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from apps.common import lexical

EMBEDDING_DIMENSIONS = 384
WORD_DIMENSIONS = 512
DIMENSIONS = EMBEDDING_DIMENSIONS + WORD_DIMENSIONS
GROUP_THRESHOLD = 0.36
FOREIGN_EMBEDDING_WEIGHT = 0.35
FOREIGN_THRESHOLD = 0.28
# The detector's probability (among the stemmed languages) above which a question is taken to
# be in the language it names; short English questions are often under it, and stay English.
_LANGUAGE_CONFIDENCE = 0.5
_GRAM = 4


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


def foreign_config(text: str) -> str | None:
    """The text search configuration of a question the detector confidently gives a language
    other than English; None for English or when it is unsure."""
    code, probability = lexical.query_language(text)
    if code == "en" or probability < _LANGUAGE_CONFIDENCE:
        return None
    return lexical.LANGUAGE_CONFIGS.get(code)


def _word_vector(stems: list[str]) -> np.ndarray:
    """The stems' character 4-grams ("<garag", "arag", ...), each distinct one hashed to one of
    WORD_DIMENSIONS counts; unit length (all zero without stems)."""
    vector = np.zeros(WORD_DIMENSIONS, dtype=np.float32)
    grams: set[str] = set()
    for stem in stems:
        marked = f"<{stem}>"
        grams.update(marked[i : i + _GRAM] for i in range(max(1, len(marked) - _GRAM + 1)))
    for gram in grams:
        digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % WORD_DIMENSIONS] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def question_vector(embedding: np.ndarray, stems: list[str] | None) -> np.ndarray:
    """A question's vector: its unit embedding, then its words (all zero for a question in
    English or of unsure language, `stems` None, or one of stop words only)."""
    if not stems:
        return padded(embedding)
    return np.concatenate([embedding, _word_vector(stems)]).astype(np.float32)


def _embedding_weight(vector: np.ndarray) -> float:
    """How much a question's similarity rests on its embedding: all of it for a question
    without words, FOREIGN_EMBEDDING_WEIGHT for one with them."""
    return FOREIGN_EMBEDDING_WEIGHT if vector[EMBEDDING_DIMENSIONS:].any() else 1.0


def threshold_for(stems: list[str] | None) -> float:
    """The similarity a question joins a group at: as English without words to go by."""
    return FOREIGN_THRESHOLD if stems else GROUP_THRESHOLD


def padded(vector: np.ndarray) -> np.ndarray:
    """A vector of DIMENSIONS: one stored with its embedding only gets an empty words part."""
    if vector.shape[-1] == DIMENSIONS:
        return vector.astype(np.float32)
    return np.concatenate([vector, np.zeros(DIMENSIONS - vector.shape[-1])]).astype(np.float32)


@dataclass
class Centroids:
    """The groups of one Agent as a matrix of centroid sums, grown as questions are assigned.
    `keys[i]` names row i (a group's id, or None for a group made in this pass)."""

    keys: list[str | None] = field(default_factory=list)
    sums: np.ndarray = field(default_factory=lambda: np.zeros((0, DIMENSIONS), dtype=np.float32))

    def add_group(self, key: str | None, vector_sum: np.ndarray) -> int:
        self.keys.append(key)
        self.sums = np.vstack([self.sums, padded(vector_sum).reshape(1, DIMENSIONS)])
        return len(self.keys) - 1

    def assign(self, vector: np.ndarray, *, threshold: float = GROUP_THRESHOLD) -> tuple[int, bool]:
        """The row the `vector` joins and whether that row is new; the row's sum grows."""
        if len(self.keys):
            similarity = self.similarity(vector)
            best = int(np.argmax(similarity))
            if float(similarity[best]) >= threshold:
                self.sums[best] += vector
                return best, False
        return self.add_group(None, vector), True

    def similarity(self, vector: np.ndarray) -> np.ndarray:
        """A question's similarity to each group: the cosine of its embedding with the group's
        embeddings, and of its words with the group's words, weighed. Each part of a centroid
        is normalised on its own: questions of one language have embeddings alike whatever they
        ask, so in one sum the embeddings would outweigh the words as a group grows, and every
        question of that language would end up joining it."""
        split = EMBEDDING_DIMENSIONS
        weight = _embedding_weight(vector)
        embeddings, words = self.sums[:, :split], self.sums[:, split:]
        similarity = weight * (embeddings @ vector[:split]) / _norms(embeddings)
        if weight < 1.0:
            similarity += (1.0 - weight) * (words @ vector[split:]) / _norms(words)
        return similarity


def _norms(rows: np.ndarray) -> np.ndarray:
    return np.maximum(np.linalg.norm(rows, axis=1), 1e-12)


def group(vectors: np.ndarray, thresholds: list[float] | None = None) -> list[int]:
    """The group of each of `vectors` (in the order asked, each with its threshold; by
    default GROUP_THRESHOLD), from no groups."""
    centroids = Centroids()
    limits = thresholds or [GROUP_THRESHOLD] * len(vectors)
    return [
        centroids.assign(vector, threshold=limit)[0]
        for vector, limit in zip(vectors, limits, strict=True)
    ]
