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
import re
import unicodedata

from apps.common.lexical import query_language

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


def query_class(query: str, *, language: tuple[str, float] | None = None) -> str:
    """Which similarity curve a query gets: "other" (mostly outside the Latin script), "foreign"
    (Latin script, another language than English), else "latin". `language`: the query's
    (code, probability) when the caller has it already."""
    if script_of(query) != "latin":
        return "other"
    code, probability = language or query_language(query)
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


# --- tables of contents ---------------------------------------------------------------------

# A passage that lists where things are (a table of contents, an index page) holds the words
# of every section it names and so matches their questions as well as the sections do, but
# answers none of them. Its score is multiplied by this, so the section it points to ranks
# above it (and a question only a contents page matches is less sure to be answered).
CONTENTS_FACTOR = 0.5
# In keyword and semantic modes (their own order), a contents page moves this many places down.
CONTENTS_DEMOTION = 5.5
_CONTENTS_TITLE = re.compile(
    r"(?:table of contents|contents|index|inhalt|inhaltsverzeichnis|sommaire|"
    r"table des matières|índice|indice|sumário|sommario|содержание|оглавление|目录|目錄|"
    r"目次|차례|목차|المحتويات|فهرس|תוכן העניינים)",
    re.IGNORECASE,
)
# An entry: a list item that is only a link inside the document ("* [Install](#install)"), or
# a title followed by dot leaders or spaces and a page number ("2.1 Scope ........ 4"). Each
# line is checked by its end first: a search reads 30 passages of up to 1,800 characters.
_LINK_ENTRY = re.compile(r"(?:[-*+]\s+|\d{1,3}(?:\.\d{1,3})*\.?\s+)?\[[^\]\n]{1,120}\]\(#[^)\s]*\)")
_PAGE_ENTRY = re.compile(r"(?:\.{3,}|…+|\t|\s{3})\s*\d{1,4}$")
_ENTRY_MAX_CHARS = 160
_HEADING_LINE = re.compile(r"\s{0,3}#{1,6}\s+(.*)")
# At least this many entries, making up at least this share of the passage's lines.
_CONTENTS_MIN_ENTRIES = 4
_CONTENTS_MIN_SHARE = 0.6


def _is_entry(line: str) -> bool:
    if not line or len(line) > _ENTRY_MAX_CHARS:
        return False
    if line[-1] == ")":
        return _LINK_ENTRY.fullmatch(line) is not None
    return line[-1].isdigit() and _PAGE_ENTRY.search(line) is not None


def is_contents_page(text: str, heading_path: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether a passage reads as a table of contents or an index: under a heading that says
    so ("Contents", "目录", "Index", ...), or made mostly of entries (in-document links, titles
    with page numbers)."""
    first = text.lstrip().split("\n", 1)[0]
    titles = [match.group(1) for match in [_HEADING_LINE.match(first)] if match]
    for title in [*heading_path[-1:], *titles]:
        if _CONTENTS_TITLE.fullmatch(title.strip(" :#*")):
            return True
    lines = [line for line in text.splitlines() if line.strip()]
    # The common case, told cheaply: too few lines end as an entry does (a link or a number).
    if text.count("](#") < _CONTENTS_MIN_ENTRIES:
        numbered = sum(1 for line in lines if line.rstrip()[-1:].isdigit())
        if numbered < _CONTENTS_MIN_ENTRIES:
            return False
    body = [line for line in lines if not _HEADING_LINE.match(line)]
    entries = sum(1 for line in body if _is_entry(line.strip()))
    return entries >= _CONTENTS_MIN_ENTRIES and entries >= _CONTENTS_MIN_SHARE * len(body)


# --- hybrid's order -----------------------------------------------------------------------

# The calibrated score saturates: past this, passages are all "surely relevant" (0.93-1.00 for
# ten passages in a row) and their differences say little, so among them the fused order
# (the agreement of keywords and meaning) decides; below it, the score does.
ORDER_SATURATION = 0.9


def order_key(score: float, *, place: int) -> tuple[float, int]:
    """Hybrid's sort key for a candidate: its calibrated score, scores at or above
    ORDER_SATURATION counted as equal, then its place in the fused list."""
    return (-min(score, ORDER_SATURATION), place)
