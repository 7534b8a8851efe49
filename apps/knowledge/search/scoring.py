"""Fusion and the calibrated score: the two halves' lists fused by reciprocal rank, and each
chosen passage scored by how much of the query it holds and how close its best window is in
meaning (apps.knowledge.relevance), then put in the mode's order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.knowledge import embeddings, relevance
from apps.knowledge.search.hits import json_list

RRF_K = 60


def reciprocal_rank_fusion(rankings: list[list[int]]) -> dict[int, float]:
    """Each id scores the sum of 1 / (RRF_K + rank) over the rankings it appears in (rank 1 =
    best): agreement between the halves counts more than a high place in one of them."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return fused


@dataclass(frozen=True)
class Scored:
    """One chosen passage with its evidence and score."""

    place: int  # in the mode's candidate order, 0 = first
    chunk_id: int
    row: tuple  # hits.read_hits's row
    coverage: float
    similarity: float | None
    score: float  # what the hit reports and `min_score` is compared with
    ordered_by: float  # what hybrid orders by (the query's script's curve)
    contents: bool  # a table of contents or index page


def score_candidates(
    chosen: list[int],
    rows: dict[int, tuple],
    *,
    weights: list[tuple[float, frozenset[str]]],
    held_words,
    similarities: dict[int, float],
    vector: np.ndarray | None,
    script: str,
    order_script: str,
) -> list[Scored]:
    """The chosen passages still searchable, scored; `held_words(row)` says which query terms
    a row holds. A passage the semantic half did not list gets its similarity computed here."""
    if vector is not None:
        similarities = {**similarities, **_missing_similarities(chosen, rows, similarities, vector)}
    scored = []
    for place, chunk_id in enumerate(chosen):
        row = rows.get(chunk_id)
        if row is None:  # deleted or disabled between the two queries
            continue
        covered = relevance.coverage(weights=weights, held=held_words(row))
        similarity = similarities.get(chunk_id)
        score = relevance.score(
            coverage=covered, similarity=similarity if vector is not None else None, script=script
        )
        ordered_by = score
        if order_script != script and vector is not None:
            ordered_by = relevance.score(
                coverage=covered, similarity=similarity, script=order_script
            )
        contents = relevance.is_contents_page(row[6] or "", json_list(row[3]))
        if contents:
            score = round(score * relevance.CONTENTS_FACTOR, 4)
            ordered_by *= relevance.CONTENTS_FACTOR
        scored.append(
            Scored(place, chunk_id, row, covered, similarity, score, ordered_by, contents)
        )
    return scored


def _missing_similarities(
    chosen: list[int], rows: dict[int, tuple], known: dict[int, float], vector: np.ndarray
) -> dict[int, float]:
    """The similarity of the chosen passages the semantic half did not list (found by keyword
    alone), from their stored windows when the current model made them: in one product."""
    missing = [
        chunk_id
        for chunk_id in chosen
        if chunk_id not in known
        and (row := rows.get(chunk_id)) is not None
        and row[10]
        and embeddings.comparable(row[11])
    ]
    scores = embeddings.best_window_scores(
        vector, [bytes(rows[chunk_id][10]) for chunk_id in missing]
    )
    return {chunk_id: float(value) for chunk_id, value in zip(missing, scores, strict=True)}


def in_mode_order(scored: list[Scored], *, mode: str) -> list[Scored]:
    """Hybrid: by calibrated score, near-equal scores in fused order (relevance.order_key);
    the other modes keep their own order, a contents page after the sections it points to."""
    if mode == "hybrid":
        return sorted(
            scored, key=lambda item: relevance.order_key(item.ordered_by, place=item.place)
        )
    return sorted(
        scored,
        key=lambda item: item.place + (relevance.CONTENTS_DEMOTION if item.contents else 0),
    )
