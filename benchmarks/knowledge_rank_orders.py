"""Hybrid's order among its candidates, measured offline on the relevance benchmark's questions.

    BENCH_DATABASE_URL=... uv run python benchmarks/knowledge_rank_orders.py [--set main|heldout]
        [--dump PATH] [--load PATH]

Reads the Agent `benchmarks/knowledge_relevance.py` left ready (run that first, same code), asks
every answerable question in hybrid mode for its whole reranking pool (the fused top 30, at
`min_score` 0, through `search.search_chunks`), and orders those candidates again in several
ways from what each hit explains (fused value, coverage, similarity, contents page): R@5 and
MRR@10 per kind for each. The shipped order is `relevance.order_key`. `--dump` writes the
candidates as JSON lines, `--load` reads such a file instead of searching.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

POOL = 30


def dump(question_set: dict) -> list[dict]:
    import knowledge_relevance as bench

    from apps.knowledge import relevance, search

    agent, documents = bench.reusable_agent(question_set["documents"])
    if agent is None:
        raise SystemExit("no ready benchmark Agent: run benchmarks/knowledge_relevance.py first")
    rows = []
    for question in question_set["questions"]:
        if question["kind"] == "no_answer":
            continue
        accepted = {documents[path] for path in question["documents"] if path in documents}
        answers = [bench.normalise(answer) for answer in question["answers"]]
        hits = search.search_chunks(
            agent=agent, query=question["question"], limit=POOL, mode="hybrid", min_score=0.0
        )
        order_script = relevance.script_of(question["question"])
        candidates = []
        for hit in hits:
            ordered_by = (
                relevance.score(
                    coverage=hit.coverage, similarity=hit.similarity, script=order_script
                )
                if hit.similarity is not None
                else hit.score
            )
            candidates.append(
                {
                    "fused": hit.fused or 0.0,
                    "coverage": hit.coverage,
                    "similarity": hit.similarity,
                    "score": hit.score,
                    "ordered_by": ordered_by,
                    "contents": hit.contents_page,
                    "answers": hit.document_id in accepted
                    and any(answer in bench.normalise(hit.text) for answer in answers),
                }
            )
        rows.append({"id": question["id"], "kind": question["kind"], "candidates": candidates})
    return rows


def keyword_curves(question_set: dict) -> str:
    """Keyword mode's abstention under candidate curves (coverage alone): for each, the
    no-answer questions left with nothing at the default threshold and the answers (found in
    the top 10 at min_score 0) it would hide."""
    import knowledge_relevance as bench

    from apps.knowledge import relevance, search

    agent, documents = bench.reusable_agent(question_set["documents"])
    if agent is None:
        raise SystemExit("no ready benchmark Agent: run benchmarks/knowledge_relevance.py first")
    curves = {
        "keyword curve (shipped)": relevance.KEYWORD_WEIGHTS,
        "hybrid's coverage-only curve ('other')": relevance.MEANING_WEIGHTS["other"][:2],
    }
    threshold = relevance.DEFAULT_MIN_SCORE
    empty = dict.fromkeys(curves, 0)
    lost: dict[str, list[str]] = {name: [] for name in curves}
    no_answer = 0
    for question in question_set["questions"]:
        hits = search.search_chunks(
            agent=agent, query=question["question"], limit=10, mode="keyword", min_score=0.0
        )
        coverages = [hit.coverage for hit in hits]
        if question["kind"] == "no_answer":
            no_answer += 1
        accepted = {documents[path] for path in question.get("documents", ()) if path in documents}
        answers = [bench.normalise(answer) for answer in question.get("answers", ())]
        answer = next(
            (
                hit.coverage
                for hit in hits
                if hit.document_id in accepted
                and any(text in bench.normalise(hit.text) for text in answers)
            ),
            None,
        )
        for name, (bias, weight) in curves.items():
            scores = [relevance._sigmoid(bias + weight * value) for value in coverages]
            if question["kind"] == "no_answer" and not any(x >= threshold for x in scores):
                empty[name] += 1
            if answer is not None and relevance._sigmoid(bias + weight * answer) < threshold:
                lost[name].append(question["id"])
    lines = [
        "| keyword curve | no-answer empty | answers hidden by the threshold |",
        "|---|---|---|",
    ]
    for name in curves:
        lines.append(f"| {name} | {empty[name]}/{no_answer} | {', '.join(lost[name]) or 'none'} |")
    return "\n".join(lines)


def _saturated(cap: float, contents: bool):
    def key(candidate: dict, place: int):
        value = candidate["ordered_by"]
        if candidate["contents"] and contents:
            value *= 0.5
        return (-min(value, cap), place)

    return key


ORDERS = {
    "fused (reciprocal rank fusion alone)": lambda c, place: (place,),
    "score (before)": _saturated(2.0, contents=False),
    "score, contents pages halved": _saturated(2.0, contents=True),
    "score capped at 0.95, then fused": _saturated(0.95, contents=True),
    "score capped at 0.90, then fused (shipped)": _saturated(0.90, contents=True),
    "score capped at 0.80, then fused": _saturated(0.80, contents=True),
    "score capped at 0.90, then similarity": lambda c, place: (
        -min(c["ordered_by"] * (0.5 if c["contents"] else 1), 0.9),
        -(c["similarity"] or 0),
        place,
    ),
}


def analyse(rows: list[dict]) -> str:
    kinds = ("lexical", "paraphrase", "crosslingual")
    lines = [
        "| order | " + " | ".join(f"{kind} R@5" for kind in kinds) + " | all R@5 | all MRR@10 |",
        "|---|" + "---|" * (len(kinds) + 2),
    ]
    for name, key in ORDERS.items():
        found: dict[str, list[int | None]] = {kind: [] for kind in kinds}
        for row in rows:
            by_fused = sorted(row["candidates"], key=lambda c: -c["fused"])
            ordered = sorted(enumerate(by_fused), key=lambda item: key(item[1], item[0]))
            rank = next((i for i, (_, c) in enumerate(ordered, start=1) if c["answers"]), None)
            found[row["kind"]].append(rank)
        every = [rank for ranks in found.values() for rank in ranks]

        def recall(ranks, cut=5):
            return sum(1 for r in ranks if r is not None and r <= cut) / max(len(ranks), 1)

        mrr = sum(1 / r for r in every if r is not None and r <= 10) / max(len(every), 1)
        lines.append(
            f"| {name} | "
            + " | ".join(f"{recall(found[kind]):.2f}" for kind in kinds)
            + f" | {recall(every):.2f} | {mrr:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="main")
    parser.add_argument("--dump")
    parser.add_argument("--load")
    parser.add_argument("--keyword-curves", action="store_true")
    args = parser.parse_args()
    if args.load:
        rows = [json.loads(line) for line in Path(args.load).read_text().splitlines()]
    else:
        import knowledge_relevance as bench

        bench._prepare_environment()
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        if args.keyword_curves:
            print(keyword_curves(bench.load_set(args.set)))
            return
        rows = dump(bench.load_set(args.set))
        if args.dump:
            Path(args.dump).write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(analyse(rows))


if __name__ == "__main__":
    main()
