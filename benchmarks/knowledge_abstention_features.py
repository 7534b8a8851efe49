"""Abstention features tried offline on the hybrid candidates (docs/knowledge.md, fourth pass).

    DATABASE_URL=<relevance benchmark's database> uv run python \\
        benchmarks/knowledge_abstention_features.py dump bench bench.jsonl
    DATABASE_URL=<calibration's database> uv run python \\
        benchmarks/knowledge_abstention_features.py dump calib calib.jsonl
    uv run python benchmarks/knowledge_abstention_features.py analyse bench.jsonl calib.jsonl
    uv run python benchmarks/knowledge_abstention_features.py timing bench.jsonl

`dump` (to a file, or to stdout for `-`) reads the Agents that `knowledge_relevance.py` and `knowledge_calibration.py` left in
their databases (run them first, with this code) and writes, for every question of both
relevance sets or every calibration query (the calibration's own generation, seed 7, 4
sentences a document), the hybrid top 30 (`search_chunks`, min_score 0) with each passage's
coverage, similarity and text, whether it answers, and the query's words with the number of
passages holding each of their readings.

`analyse` adds, for the first 10 candidates of each query (by the shipped score), token-level
late interaction with the shipped model (MaxSim: per query word, the best cosine between its
word pieces' vectors before pooling and any token of the passage's windows) and the
unknown-real-word test, fits each feature with coverage and similarity on the calibration
queries (latin class, as the calibration does), picks the highest threshold that keeps every
sentence and paraphrase answer there, and prints per set the no-answer questions left empty,
the English answers lost and hybrid R@5; then the threshold the main set's target (21 of its
26 no-answer questions empty) would need, and what it costs. `timing`: what late interaction
would cost per query (model runs over the candidates' windows).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# The shipped curves (no Django needed to read them).
from apps.knowledge.relevance import MEANING_WEIGHTS  # noqa: E402 - after the path is set

TOP = 30  # candidates dumped per query
LATE = 10  # candidates given the late-interaction features
MIN_LETTERS = 4  # an unknown real word has at least this many letters
NEUTRAL = 0.45  # lowest MaxSim given to a passage mostly outside the Latin script
TARGET = 21  # no-answer questions of the main set left empty: 4 of 5 of its 26


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("REDIS_URL", "")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


# --- dump ------------------------------------------------------------------------------------


def _record(agent, query: str, **extra) -> dict:
    from django.db import connection

    from apps.common import lexical
    from apps.knowledge import relevance, search
    from apps.knowledge.search import keyword
    from apps.knowledge.search import state as search_state

    state = search_state.agent_state(agent.pk)
    parsed = lexical.parse_query(query)
    words, chunk_count = [], 0
    if not parsed.is_empty:
        terms = keyword.query_terms(agent_id=agent.pk, words=parsed.words, configs=state.configs)
        chunk_count = terms.chunk_count
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT lexeme, positions FROM unnest(to_tsvector('simple', %s))", [parsed.words]
            )
            surface = {p: lexeme for lexeme, positions in cursor.fetchall() for p in positions}
        words = [
            {
                "word": surface.get(position, ""),
                "readings": {term: terms.frequencies.get(term, 0) for term in readings},
            }
            for position, readings in sorted(terms.readings.items())
        ]
    hits = search.search_chunks(agent=agent, query=query, limit=TOP, mode="hybrid")
    return {
        "query": query,
        "class": relevance.query_class(query),
        "words": words,
        "chunk_count": chunk_count,
        "candidates": [
            {
                "chunk_id": hit.chunk_id,
                "document_id": str(hit.document_id),
                "text": hit.text,
                "coverage": hit.coverage,
                "similarity": hit.similarity,
                "score": hit.score,
            }
            for hit in hits
        ],
        **extra,
    }


def dump_bench(out) -> None:
    from knowledge_relevance import WORKSPACE_NAME, load_set, normalise

    from apps.workspaces.models import Agent

    agent = Agent.objects.get(workspace__name=WORKSPACE_NAME, name="Relevance")
    by_name = {row.file_name: str(row.pk) for row in agent.knowledge_documents.all()}
    for name in ("main", "heldout"):
        for question in load_set(name)["questions"]:
            accepted = {by_name.get(Path(path).name) for path in question.get("documents", [])}
            answers = [normalise(answer) for answer in question.get("answers", [])]
            record = _record(
                agent,
                question["question"],
                set=name,
                id=question["id"],
                kind=question["kind"],
                lang=question["lang"],
            )
            for candidate in record["candidates"]:
                candidate["answer"] = candidate["document_id"] in accepted and any(
                    answer in normalise(candidate["text"]) for answer in answers
                )
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def dump_calib(out) -> None:
    import knowledge_calibration as calibration

    from apps.workspaces.models import Agent

    paraphrase = json.loads((ROOT / "benchmarks" / "knowledge_paraphrase.json").read_text())
    agents = list(Agent.objects.filter(workspace__name="Knowledge calibration").order_by("name"))
    documents = calibration.documents_held(agents, paraphrase)
    queries = calibration.calibration_queries(agents, documents, paraphrase, random.Random(7), 4)
    for side, query, answers, kind in queries:
        expected = min(answers) if answers else None  # a generated query has one answer
        record = _record(agents[side], query, set="calib", kind=kind, expected=expected)
        for candidate in record["candidates"]:
            candidate["answer"] = answers is not None and candidate["chunk_id"] in answers
        out.write(json.dumps(record, ensure_ascii=False) + "\n")


# --- features --------------------------------------------------------------------------------


def _sigmoid(value: float) -> float:
    return 0.0 if value < -40 else 1 / (1 + math.exp(-value))


def _shipped(record: dict, candidate: dict) -> float:
    bias, coverage, similarity = MEANING_WEIGHTS.get(record["class"], MEANING_WEIGHTS["other"])
    return _sigmoid(
        bias + coverage * candidate["coverage"] + similarity * (candidate["similarity"] or 0.0)
    )


class TokenModel:
    """The shipped model's token vectors (last_hidden_state, unit length, no [CLS]/[SEP])."""

    def __init__(self) -> None:
        from apps.knowledge import embeddings

        self.model = embeddings._model()
        self.vocabulary = json.loads(self.model.files.tokenizer.read_text())["model"]["vocab"]
        self.cache: dict[tuple[str, bool], list] = {}

    def windows(self, text: str, *, first_only: bool = False) -> list[tuple[list, np.ndarray]]:
        key = (text, first_only)
        if key not in self.cache:
            model = self.model
            out = []
            windows = model.windows([text])[0]
            for window in windows[:1] if first_only else windows:
                ids = np.array([window.ids], dtype=np.int64)
                feed = {
                    "input_ids": ids,
                    "attention_mask": np.array([window.attention_mask], dtype=np.int64),
                    "token_type_ids": np.zeros_like(ids),
                }
                (hidden,) = model.session.run(
                    [model.output], {k: v for k, v in feed.items() if k in model.inputs}
                )
                keep = [i for i, t in enumerate(window.tokens) if t not in ("[CLS]", "[SEP]")]
                vectors = hidden[0][keep]
                vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                out.append(([window.offsets[i] for i in keep], vectors))
            self.cache[key] = out
        return self.cache[key]


def _idf(found: int, total: int) -> float:
    return math.log(1 + (total - found + 0.5) / (found + 0.5))


def unknown_real_words(record: dict, vocabulary: dict) -> list[str]:
    """Query words that are whole word pieces of the model (real words, not typos), of at least
    MIN_LETTERS letters, not stop words, no reading of which any passage of the Agent holds."""
    return [
        word["word"]
        for word in record["words"]
        if re.fullmatch(r"[a-z]+", word["word"] or "")
        and len(word["word"]) >= MIN_LETTERS
        and word["word"] in vocabulary
        and all(found == 0 for found in word["readings"].values())
    ]


def add_late_interaction(record: dict, tokens: TokenModel) -> None:
    """Per candidate among the first LATE (shipped order): MaxSim per query word."""
    ((offsets, query_vectors),) = tokens.windows(record["query"], first_only=True)
    lowered = record["query"].lower()
    spans = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"\w+", lowered)]
    content = {word["word"] for word in record["words"] if word["word"]}
    owner = []
    for start, _ in offsets:
        word = next((w for a, b, w in spans if a <= start < b), None)
        owner.append(word if word in content else None)
    order = sorted(record["candidates"], key=lambda c: -_shipped(record, c))
    for candidate in order[:LATE]:
        passage = np.concatenate([vectors for _, vectors in tokens.windows(candidate["text"])])
        best = (query_vectors @ passage.T).max(axis=1)
        per_word: dict[str, list[float]] = {}
        for index, word in enumerate(owner):
            if word is not None:
                per_word.setdefault(word, []).append(float(best[index]))
        candidate["maxsim"] = {word: float(np.mean(values)) for word, values in per_word.items()}
        candidate["maxsim_tokens"] = float(best.mean())


class StaticPieces:
    """Each word piece's vector out of context: the model's output for "[CLS] piece [SEP]",
    unit length. MaxSim over these needs the passages tokenized, not run through the model."""

    def __init__(self, tokens: TokenModel) -> None:
        self.model = tokens.model
        self.vectors: dict[int, np.ndarray] = {}
        self.special = {
            self.model.tokenizer.token_to_id(name) for name in ("[CLS]", "[SEP]", "[PAD]")
        }

    def pieces(self, text: str) -> list[tuple[int, tuple[int, int]]]:
        encoding = self.model.tokenizer.encode(text)
        windows = [encoding, *encoding.overflowing]
        return [
            (piece, offset)
            for window in windows
            for piece, offset in zip(window.ids, window.offsets, strict=True)
            if piece not in self.special
        ]

    def of(self, pieces: list[int]) -> np.ndarray:
        missing = sorted(set(pieces) - self.vectors.keys())
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            ids = np.array([[101, piece, 102] for piece in batch], dtype=np.int64)
            feed = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            }
            (hidden,) = self.model.session.run(
                [self.model.output], {k: v for k, v in feed.items() if k in self.model.inputs}
            )
            vectors = hidden[:, 1, :] / np.linalg.norm(hidden[:, 1, :], axis=1, keepdims=True)
            self.vectors.update(zip(batch, vectors, strict=True))
        return np.array([self.vectors[piece] for piece in pieces]).reshape(-1, 384)


def add_static_maxsim(record: dict, static: StaticPieces) -> None:
    """As add_late_interaction, with every piece's vector out of context."""
    query = static.pieces(record["query"])
    lowered = record["query"].lower()
    spans = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"\w+", lowered)]
    content = {word["word"] for word in record["words"] if word["word"]}
    owner = []
    for _, (start, _) in query:
        word = next((w for a, b, w in spans if a <= start < b), None)
        owner.append(word if word in content else None)
    query_vectors = static.of([piece for piece, _ in query])
    order = sorted(record["candidates"], key=lambda c: -_shipped(record, c))
    for candidate in order[:LATE]:
        passage = static.of(sorted({piece for piece, _ in static.pieces(candidate["text"])}))
        best = (query_vectors @ passage.T).max(axis=1) if len(passage) else np.zeros(len(owner))
        per_word: dict[str, list[float]] = {}
        for index, word in enumerate(owner):
            if word is not None:
                per_word.setdefault(word, []).append(float(best[index]))
        candidate["maxsim"] = {w: float(np.mean(v)) for w, v in per_word.items()} or {"": 1.0}
        candidate["maxsim_tokens"] = float(best.mean()) if len(best) else 1.0


def _latin_passage(text: str) -> bool:
    latin = sum(1 for ch in text if ch.isalpha() and ord(ch) < 0x250)
    return latin >= sum(1 for ch in text if ch.isalpha()) - latin


def _weights(record: dict) -> dict[str, float]:
    total = max(record["chunk_count"], 1)
    return {
        word["word"]: max(_idf(found, total) for found in word["readings"].values())
        for word in record["words"]
        if word["word"] and word["readings"]
    }


def _weighted_mean(c: dict, r: dict) -> list[float]:
    weights = _weights(r)
    total = sum(weights.get(w, 0.0) for w in c["maxsim"]) or 1.0
    return [sum(v * weights.get(w, 0.0) for w, v in c["maxsim"].items()) / total]


def _lowest(c: dict, r: dict) -> list[float]:
    return [min(c["maxsim"].values())]


def _lowest_latin(c: dict, r: dict) -> list[float]:
    return [min(c["maxsim"].values()) if _latin_passage(c["text"]) else NEUTRAL]


def _share_below(c: dict, r: dict) -> list[float]:
    weights = _weights(r)
    total = sum(weights.get(w, 0.0) for w in c["maxsim"]) or 1.0
    return [sum(weights.get(w, 0.0) for w, v in c["maxsim"].items() if v < 0.4) / total]


def features(vocabulary: dict) -> dict[str, Callable[[dict, dict], list[float]]]:
    def unknown(c: dict, r: dict) -> list[float]:
        return [1.0 if unknown_real_words(r, vocabulary) else 0.0]

    def unknown_unmatched(c: dict, r: dict) -> list[float]:
        words = unknown_real_words(r, vocabulary)
        weak = _latin_passage(c["text"]) and any(c["maxsim"].get(w, 1.0) < 0.3 for w in words)
        return [1.0 if weak else 0.0]

    return {
        "none": lambda c, r: [],
        "idf-weighted mean MaxSim of the query's words": _weighted_mean,
        "lowest MaxSim of the query's words": _lowest,
        "the same, non-Latin passages neutral": _lowest_latin,
        "mean MaxSim of every query token": lambda c, r: [c["maxsim_tokens"]],
        "share of the query's idf matched below 0.4": _share_below,
        "an unknown real word (present or not)": unknown,
        "an unknown real word matched below 0.3 in a Latin passage": unknown_unmatched,
    }


def _rows(record: dict, candidate: dict, feature) -> list[float]:
    return [1.0, candidate["coverage"], candidate["similarity"] or 0.0, *feature(candidate, record)]


def fit(calib: list[dict], feature) -> np.ndarray:
    """As knowledge_calibration.py: answers found in the top 10 are positives; the three
    strongest candidates of each unanswerable query negatives; latin class only."""
    from knowledge_calibration import _fit

    positives, negatives = [], []
    for record in calib:
        if record["class"] != "latin":
            continue
        top = [c for c in record["candidates"] if "maxsim" in c]
        if record["expected"] is not None:
            positives += [(_rows(record, c, feature), record["kind"]) for c in top if c["answer"]]
        else:
            strongest = sorted(top, key=lambda c: -(c["coverage"] + (c["similarity"] or 0.0)))
            negatives += [(_rows(record, c, feature), record["kind"]) for c in strongest[:3]]
    return _fit(positives, negatives)


def scorer(weights: np.ndarray, feature):
    def score(record: dict, candidate: dict) -> float:
        if record["class"] != "latin":
            return _shipped(record, candidate)
        if "maxsim" not in candidate:  # past the first LATE: not ordered again
            return -1.0
        return _sigmoid(float(np.dot(weights, _rows(record, candidate, feature))))

    return score


def _top(record: dict, score) -> list[tuple[float, dict]]:
    ranked = sorted(enumerate(record["candidates"]), key=lambda p: (-score(record, p[1]), p[0]))
    return [(score(record, c), c) for _, c in ranked[:10]]


def threshold(calib: list[dict], score) -> float:
    """The highest threshold keeping every sentence and paraphrase answer found."""
    best = 0.05
    for step in range(5, 60):
        value = step / 100
        kept = all(
            any(c["answer"] and s >= value for s, c in top)
            for record in calib
            if record["kind"] in ("sentence", "paraphrase")
            for top in [_top(record, score)]
            if any(c["answer"] for _, c in top)
        )
        if kept:
            best = value
    return best


def evaluate(bench: list[dict], score, value: float) -> dict[str, str]:
    out = {}
    for name in ("main", "heldout"):
        records = [r for r in bench if r["set"] == name]
        empty = found = found_paraphrases = 0
        answerable = [r for r in records if r["kind"] != "no_answer"]
        paraphrases = sum(1 for r in answerable if r["kind"] == "paraphrase")
        lost_ids = []
        for record in records:
            top = _top(record, score)
            if record["kind"] == "no_answer":
                empty += not any(s >= value for s, _ in top)
                continue
            rank = next((i for i, (_, c) in enumerate(top, 1) if c["answer"]), None)
            found += rank is not None and rank <= 5
            found_paraphrases += rank is not None and rank <= 5 and record["kind"] == "paraphrase"
            kept = any(c["answer"] and s >= value for s, c in top)
            if record["lang"] == "en" and rank is not None and not kept:
                lost_ids.append(record["id"])
        no_answer = len(records) - len(answerable)
        out[name] = (
            f"{empty}/{no_answer} empty, English answers lost: {', '.join(lost_ids) or 'none'}, "
            f"R@5 {found / len(answerable):.2f} (paraphrases {found_paraphrases / paraphrases:.2f})"
        )
    return out


def _empty(line: str) -> int:
    return int(line.split("/", 1)[0])


def analyse(bench_path: str, calib_path: str) -> None:
    bench = [json.loads(line) for line in Path(bench_path).read_text("utf-8").splitlines()]
    calib = [json.loads(line) for line in Path(calib_path).read_text("utf-8").splitlines()]
    tokens = TokenModel()
    static = StaticPieces(tokens)
    for vectors in ("token vectors in context", "word-piece vectors out of context"):
        print(f"--- MaxSim over {vectors}")
        for record in bench + calib:
            if vectors.endswith("in context"):
                add_late_interaction(record, tokens)
            else:
                add_static_maxsim(record, static)
        _analyse(bench, calib, tokens)


def _analyse(bench: list[dict], calib: list[dict], tokens: TokenModel) -> None:
    for name, feature in features(tokens.vocabulary).items():
        weights = fit(calib, feature)
        score = scorer(weights, feature)
        value = threshold(calib, score)
        print(f"{name}: weights {np.round(weights, 2).tolist()}, threshold {value:.2f}")
        for set_name, line in evaluate(bench, score, value).items():
            print(f"  {set_name}: {line}")
        needed = next(
            (
                step / 100
                for step in range(5, 100)
                if _empty(evaluate(bench, score, step / 100)["main"]) >= TARGET
            ),
            None,
        )
        if needed is not None:
            print(f"  {TARGET}/26 empty on the main set needs {needed:.2f}:")
            for set_name, line in evaluate(bench, score, needed).items():
                print(f"    {set_name}: {line}")


def timing(bench_path: str) -> None:
    """What late interaction would cost: word-piece windows among a latin query's first
    candidates, and the model's time for one 128-piece window (one thread, as configured)."""
    import statistics
    import time

    bench = [json.loads(line) for line in Path(bench_path).read_text("utf-8").splitlines()]
    model = TokenModel().model
    records = [r for r in bench if r["class"] == "latin" and r["candidates"]]

    def windows(record: dict, count: int) -> list:
        first = sorted(record["candidates"], key=lambda c: -c["score"])[:count]
        return [w for c in first for w in model.windows([c["text"]])[0]]

    for count in (1, 10):
        sizes = sorted(len(windows(record, count)) for record in records)
        print(
            f"windows in the first {count} candidates of a latin query: median "
            f"{statistics.median(sizes):g}, p95 {sizes[int(0.95 * len(sizes))]}"
        )
    full = [w for record in records[:40] for w in windows(record, 10) if len(w.ids) >= 120][:50]
    model.run(full[:2])  # warm up
    spent = []
    for window in full:
        started = time.perf_counter()
        model.run([window])
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    print(
        f"one window of {len(full[0].ids)}+ word pieces: median {statistics.median(spent):.1f} "
        f"ms, p95 {spent[int(0.95 * len(spent))]:.1f} ms ({len(spent)} windows)"
    )
    # Out of context: every piece's vector once per process, then per query the first 10
    # candidates tokenized and compared.
    static = StaticPieces(TokenModel())
    started = time.perf_counter()
    static.of(list(range(model.tokenizer.get_vocab_size())))
    print(
        f"every word piece's vector out of context: {time.perf_counter() - started:.1f} s once, "
        f"{len(static.vectors) * 384 * 4 / 1e6:.0f} MB as float32"
    )
    spent = []
    for record in records:
        started = time.perf_counter()
        add_static_maxsim(record, static)
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    print(
        f"MaxSim out of context over the first {LATE} candidates: median "
        f"{statistics.median(spent):.1f} ms, p95 {spent[int(0.95 * len(spent))]:.1f} ms a query"
    )


def main() -> None:
    _django()
    if sys.argv[1:2] == ["dump"] and len(sys.argv) == 4:
        dump = {"bench": dump_bench, "calib": dump_calib}[sys.argv[2]]
        if sys.argv[3] == "-":
            dump(sys.stdout)
        else:
            with open(sys.argv[3], "w", encoding="utf-8") as out:
                dump(out)
    elif sys.argv[1:2] == ["analyse"] and len(sys.argv) == 4:
        analyse(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["timing"] and len(sys.argv) == 3:
        timing(sys.argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
