"""A calibrated relevance score: the probability, in [0, 1], that a passage answers the query.

Two pieces of evidence, the same in every mode:

- `coverage`: the share of the query's information the passage holds — each query word (or CJK
  character pair) weighs its idf in the Agent's passages (a word found nowhere weighs most), and
  the passage holds a word when it holds any reading of it (stemmed per language or not);
  stop words do not count. On SQLite every word weighs the same.
- `similarity`: the cosine between the query and the passage's best embedded window.

Keyword mode scores with coverage alone (it does not embed the query); semantic and hybrid modes
with both. The logistic curves below were fitted by `benchmarks/knowledge_calibration.py` on
queries generated from the corpus (sentences of the Agent's own documents, whole and with half
their words dropped, and paraphrase questions, as answerable; sentences of documents it does
not hold, questions about documents it does not hold (leave-documents-out), and unrelated
questions in several scripts, as unanswerable) — see docs/knowledge.md. The English model reads
text in other scripts poorly and rates any two such texts alike (0.5-0.7), so a query written
mostly outside the Latin script gets its own similarity curve.

A query in the Latin script but in another language than English (Spanish, German, ...: the
language detector says so with probability ≥ FOREIGN_MIN_PROBABILITY) has the same problem in a
milder form: the English model rates two texts of one such language alike whatever they say (an
unrelated Spanish question scores 0.5 against a Spanish passage, like the answer to a Spanish
question). Such a query is scored on the same curve as one in another script: by coverage.

DEFAULT_MIN_SCORE is the abstention threshold: passages scoring below it are not returned unless
the caller lowers `min_score`, so a question the knowledge cannot answer gets an empty list.
"""

from __future__ import annotations

import math
import unicodedata

from apps.knowledge.lexical import query_language

# Logistic weights: relevance = sigmoid(w · features). Fitted by
# `benchmarks/knowledge_calibration.py` (docs/knowledge.md has its output).
KEYWORD_WEIGHTS = (-1.6, 4.2)  # bias, coverage
MEANING_WEIGHTS = {
    # bias, coverage, similarity
    "latin": (-3.9, 3.1, 8.3),
    # The English model rates texts of other scripts alike: similarity told nothing there (its
    # fitted weight came out negative), so coverage decides.
    "other": (-3.1, 6.4, 0.0),
}
# Latin-script queries in another language than English: the same, for the same reason.
MEANING_WEIGHTS["foreign"] = MEANING_WEIGHTS["other"]
# The score under which passages are withheld by default (API, MCP tool, console): on the
# calibration queries, the highest threshold that kept every sentence and paraphrase answer
# found in hybrid mode (and 98 % of half sentences) while leaving 80 % of unrelated questions,
# and every paraphrase question asked of an Agent without its documents, with nothing.
DEFAULT_MIN_SCORE = 0.2
# A Latin-script query counts as written in another language than English when the detector
# says so with at least this probability (more likely than not; short English questions made
# of names often come out as some other language with less).
FOREIGN_MIN_PROBABILITY = 0.5


def script_of(text: str) -> str:
    """ "latin" when most letters of the text are Latin (or it has none), else "other"."""
    latin = other = 0
    for character in text:
        if not character.isalpha():
            continue
        if "LATIN" in unicodedata.name(character, ""):
            latin += 1
        else:
            other += 1
    return "latin" if latin >= other else "other"


def query_class(query: str) -> str:
    """Which similarity curve a query gets: "other" (mostly outside the Latin script), "foreign"
    (Latin script, another language than English), else "latin"."""
    if script_of(query) != "latin":
        return "other"
    code, probability = query_language(query)
    if code != "en" and probability >= FOREIGN_MIN_PROBABILITY:
        return "foreign"
    return "latin"


def _sigmoid(value: float) -> float:
    if value < -40:
        return 0.0
    return 1.0 / (1.0 + math.exp(-value))


def score(*, coverage: float, similarity: float | None, script: str) -> float:
    """The calibrated relevance of a passage, rounded to 4 places; `script` is the query's class
    (`query_class`): "latin" weighs similarity, "other" and "foreign" coverage alone."""
    if similarity is None:
        bias, weight = KEYWORD_WEIGHTS
        return round(_sigmoid(bias + weight * coverage), 4)
    bias, coverage_weight, similarity_weight = MEANING_WEIGHTS.get(script, MEANING_WEIGHTS["other"])
    return round(_sigmoid(bias + coverage_weight * coverage + similarity_weight * similarity), 4)


def coverage(*, weights: list[tuple[float, frozenset[str]]], held: set[str]) -> float:
    """Share of the query's weight whose words the passage holds: `weights` lists, per query
    word, its weight and its readings (index terms); `held` is the passage's matched terms."""
    total = sum(weight for weight, _ in weights)
    if total <= 0:
        return 0.0
    found = sum(weight for weight, readings in weights if readings & held)
    return found / total
