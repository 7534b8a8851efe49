"""How well unanswered questions are grouped by meaning (apps.knowledge.gaps.clustering).

Embeds the questions of benchmarks/knowledge_gap_questions.json with the packaged model (the one
search uses), groups them in their written order with the incremental rule the sweep applies,
and prints pair precision and recall:

- paraphrase pairs sharing a group (recall; target >= 0.80),
- unrelated pairs sharing a group (target <= 0.05), and the pair precision (of the pairs put in
  one group, the share that are paraphrases).

    uv run python benchmarks/knowledge_gap_grouping.py [--set evaluation|development]
        [--threshold 0.6] [--sweep] [--shuffles 20]

--sweep prints the figures for thresholds from 0.26 to 0.46 (choose on `development` only);
--shuffles also groups that many random orders of the questions and reports the worst.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from apps.knowledge.embeddings import embed_texts  # noqa: E402
from apps.knowledge.gaps.clustering import GROUP_THRESHOLD, group  # noqa: E402

DATA = Path(__file__).with_name("knowledge_gap_questions.json")


def labelled(name: str) -> tuple[list[str], list[int]]:
    data = json.loads(DATA.read_text())[name]
    questions, labels = [], []
    for number, members in enumerate(data["groups"]):
        questions += members
        labels += [number] * len(members)
    for number, question in enumerate(data["unrelated"], start=len(data["groups"])):
        questions.append(question)
        labels.append(number)
    return questions, labels


def pair_figures(labels: list[int], found: list[int]) -> dict:
    same = together = unrelated = unrelated_together = 0
    for a, b in itertools.combinations(range(len(labels)), 2):
        grouped = found[a] == found[b]
        if labels[a] == labels[b]:
            same += 1
            together += grouped
        else:
            unrelated += 1
            unrelated_together += grouped
    put_together = together + unrelated_together
    return {
        "paraphrase_pairs": same,
        "recall": together / same,
        "unrelated_pairs": unrelated,
        "unrelated_together": unrelated_together / unrelated,
        "precision": together / put_together if put_together else 1.0,
        "groups": len(set(found)),
    }


def line(threshold: float, figures: dict) -> str:
    return (
        f"threshold {threshold:.2f}: paraphrase pairs together {figures['recall']:.3f} "
        f"({figures['paraphrase_pairs']} pairs), unrelated pairs together "
        f"{figures['unrelated_together']:.4f} ({figures['unrelated_pairs']} pairs), "
        f"pair precision {figures['precision']:.3f}, {figures['groups']} groups"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="evaluation", choices=("evaluation", "development"))
    parser.add_argument("--threshold", type=float, default=GROUP_THRESHOLD)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--shuffles", type=int, default=0)
    args = parser.parse_args()
    questions, labels = labelled(args.set)
    vectors = embed_texts(questions)
    print(f"{args.set}: {len(questions)} questions, {len(set(labels))} needs")
    thresholds = [t / 100 for t in range(26, 47, 2)] if args.sweep else [args.threshold]
    for threshold in thresholds:
        print(line(threshold, pair_figures(labels, group(vectors, threshold=threshold))))
    if args.shuffles:
        rng = random.Random(7)
        worst_recall, worst_unrelated = 1.0, 0.0
        for _ in range(args.shuffles):
            order = list(range(len(questions)))
            rng.shuffle(order)
            found = group(vectors[order], threshold=args.threshold)
            figures = pair_figures([labels[i] for i in order], found)
            worst_recall = min(worst_recall, figures["recall"])
            worst_unrelated = max(worst_unrelated, figures["unrelated_together"])
        print(
            f"{args.shuffles} random orders at {args.threshold:.2f}: worst paraphrase pairs "
            f"together {worst_recall:.3f}, worst unrelated pairs together {worst_unrelated:.4f}"
        )


if __name__ == "__main__":
    main()
