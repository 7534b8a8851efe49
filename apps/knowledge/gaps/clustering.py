"""Grouping questions by meaning, incrementally: a question joins the group whose centroid is
nearest when the cosine similarity reaches GROUP_THRESHOLD, else it starts a group of its own.

A group's centroid is the normalised sum of its distinct questions' unit vectors (kept as the
sum, so adding a question is one vector addition and nothing is ever recomputed). Questions
are taken in the order they were first asked, so a group never moves once a question joined it.

GROUP_THRESHOLD was chosen on the development questions of benchmarks/knowledge_gap_questions.json
and measured on its evaluation questions (docs/knowledge.md, "Unanswered questions").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DIMENSIONS = 384
GROUP_THRESHOLD = 0.36


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


@dataclass
class Centroids:
    """The groups of one Agent as a matrix of centroid sums, grown as questions are assigned.
    `keys[i]` names row i (a group's id, or None for a group made in this pass)."""

    keys: list[str | None] = field(default_factory=list)
    sums: np.ndarray = field(default_factory=lambda: np.zeros((0, DIMENSIONS), dtype=np.float32))

    def add_group(self, key: str | None, vector_sum: np.ndarray) -> int:
        self.keys.append(key)
        self.sums = np.vstack([self.sums, vector_sum.reshape(1, DIMENSIONS).astype(np.float32)])
        return len(self.keys) - 1

    def assign(self, vector: np.ndarray, *, threshold: float = GROUP_THRESHOLD) -> tuple[int, bool]:
        """The row the unit `vector` joins and whether that row is new; the row's sum grows."""
        if len(self.keys):
            norms = np.maximum(np.linalg.norm(self.sums, axis=1), 1e-12)
            similarity = (self.sums @ vector) / norms
            best = int(np.argmax(similarity))
            if float(similarity[best]) >= threshold:
                self.sums[best] += vector
                return best, False
        return self.add_group(None, vector), True


def group(vectors: np.ndarray, *, threshold: float = GROUP_THRESHOLD) -> list[int]:
    """The group of each of `vectors` (unit rows, in the order asked), from no groups."""
    centroids = Centroids()
    return [centroids.assign(vector, threshold=threshold)[0] for vector in vectors]
