"""Fit the relevance score's curves (apps/knowledge/relevance.py) and pick the abstain threshold.

    uv run python benchmarks/knowledge_calibration.py [--per-document 4] [--seed 7]

Data generated here, from documents, not from any relevance benchmark's questions:

1. The corpus (../shared/corpus, or CORPUS_DIR) is split in two Agents by file (files of one
   family, such as the markitdown-test.* set, stay together), plus the paraphrase documents of
   benchmarks/knowledge_paraphrase.json in the first. Everything is ingested and embedded.
2. Answerable queries, per Agent: up to --per-document sentences of each of its documents, each
   asked whole and with half its words dropped at random; the answer is the chunk holding the
   sentence. Plus the paraphrase set's questions (answer: the chunk under their heading).
3. Unanswerable queries, per Agent: the same kinds of sentences taken from the OTHER Agent's
   documents, the paraphrase questions asked of the second Agent (which holds none of their
   documents: user questions with no answer there), and UNRELATED questions in several
   languages and scripts.
   With --cross-language, the questions of the cross-language set too (the patterns set of
   benchmarks/relevance/ written in a language other than English: two or more documents per
   script, and unrelated questions in those scripts): answerable by the Agent holding their
   document (any of its passages holding an answer, judged as the relevance benchmark judges),
   unanswerable by the other. The patterns set then no longer judges the curves it fitted; the
   main and held-out sets still do.
4. Every query is searched in hybrid mode (limit 10, no threshold). An answer found is a
   positive example (its coverage and similarity); every passage returned for an unanswerable
   query is a negative one. Logistic curves are fitted (Newton's method, classes weighed
   equally): coverage alone (keyword mode) and coverage + similarity per query script
   (semantic and hybrid). Printed: the weights to put in relevance.py, then, per threshold,
   the share of answers kept and of unanswerable queries that get nothing.

It runs against CALIBRATION_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/
agent_console_calibration), created and migrated if missing; never the test databases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/agent_console_calibration"

# Questions no corpus document answers, in the scripts and languages the corpus holds.
UNRELATED = [
    "what will the weather be like in Tokyo tomorrow",
    "how much is an ounce of gold today",
    "who won the football match last night",
    "recipe for chocolate chip cookies without eggs",
    "how do I reset my car's tire pressure light",
    "best time of year to visit Iceland",
    "what is the capital of Australia",
    "how many calories are in a banana",
    "明日の東京の天気はどうですか",
    "今日の金の価格はいくらですか",
    "明天北京的天气怎么样",
    "今天黄金的价格是多少",
    "내일 서울 날씨는 어때요",
    "ما هو سعر الذهب اليوم",
    "كيف سيكون الطقس غدا في القاهرة",
    "какая погода будет завтра в Москве",
    "сколько стоит золото сегодня",
    "¿qué tiempo hará mañana en Madrid?",
    "quel temps fera-t-il demain à Paris",
    "wie wird das Wetter morgen in Berlin",
    "พรุ่งนี้อากาศที่กรุงเทพเป็นอย่างไร",
    "कल दिल्ली में मौसम कैसा रहेगा",
]
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _prepare_environment() -> None:
    url = os.environ.get("CALIBRATION_DATABASE_URL", DEFAULT_DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("REDIS_URL", "")
    os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="knowledge-calibration-")
    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="knowledge-calibration-var-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if url.startswith("postgres"):
        from benchmarks.databases import ensure_database

        ensure_database(url)


def _sentences(text: str) -> list[str]:
    """Sentences of a chunk worth asking: 6-30 words, or 12-80 CJK characters."""
    out = []
    for match in _SENTENCE.finditer(re.sub(r"[#*_`|>\[\]()]", " ", text)):
        sentence = " ".join(match.group(0).split())
        words = sentence.split()
        cjk = len(_CJK.findall(sentence)) >= 12 and len(sentence) <= 80
        wordy = 6 <= len(words) <= 30 and sum(ch.isalpha() for ch in sentence) > len(sentence) / 2
        if cjk or wordy:
            out.append(sentence)
    return out


def _drop_half(sentence: str, rng: random.Random) -> str:
    if len(_CJK.findall(sentence)) >= 12:
        start = rng.randrange(0, max(1, len(sentence) // 2))
        return sentence[start : start + max(6, len(sentence) // 2)]
    words = sentence.split()
    kept = sorted(rng.sample(range(len(words)), max(3, len(words) // 2)))
    return " ".join(words[index] for index in kept)


def _family(path: Path) -> str:
    return path.stem.split("_")[0].split(".")[0] if "markitdown" not in path.stem else "markitdown"


def documents_held(agents: list, paraphrase: dict) -> list[list[str]]:
    """The corpus documents each of the two Agents holds ready (not the paraphrase documents),
    in name order: what a `--reuse` run asks about."""
    return [
        list(
            agent.knowledge_documents.filter(status="ready")
            .exclude(name__in=list(paraphrase["documents"]))
            .order_by("name")
            .values_list("pk", flat=True)
        )
        for agent in agents
    ]


def calibration_queries(
    agents: list,
    documents: list[list[str]],
    paraphrase: dict,
    rng: random.Random,
    per_document: int,
    cross_language: bool = False,
) -> list[tuple[int, str, frozenset[int] | None, str]]:
    """(agent index, query, the chunk ids that answer it or None, kind) for every query of the
    calibration (the module's docstring), sentences drawn with `rng`."""
    from apps.knowledge.models import KnowledgeChunk

    queries: list[tuple[int, str, frozenset[int] | None, str]] = []
    for side in (0, 1):
        for document_id in documents[side]:
            chunks = list(
                KnowledgeChunk.objects.filter(document_id=document_id, is_searchable=True)
                .order_by("position")
                .values_list("pk", "text")
            )
            candidates = [(pk, s) for pk, text in chunks for s in _sentences(text)]
            for pk, sentence in rng.sample(candidates, min(per_document, len(candidates))):
                for query, kind in ((sentence, "sentence"), (_drop_half(sentence, rng), "half")):
                    queries.append((side, query, frozenset({pk}), kind))
                    queries.append((1 - side, query, None, f"other Agent's {kind}"))
    for item in paraphrase["questions"]:
        chunk = (
            KnowledgeChunk.objects.filter(agent=agents[0], heading_path__contains=[item["heading"]])
            .values_list("pk", flat=True)
            .first()
        )
        if chunk:
            queries.append((0, item["question"], frozenset({chunk}), "paraphrase"))
            # Left out of the other Agent's documents: the same question, worded like a user's,
            # has no answer there (leave-documents-out).
            queries.append((1, item["question"], None, "other Agent's question"))
    for side in (0, 1):
        queries += [(side, question, None, "unrelated") for question in UNRELATED]
    if cross_language:
        queries += cross_language_queries(agents)
    return queries


def cross_language_queries(agents: list) -> list[tuple[int, str, frozenset[int] | None, str]]:
    """The cross-language set's questions (the module's docstring, --cross-language)."""
    from apps.knowledge.models import KnowledgeChunk
    from benchmarks.knowledge_relevance import load_set, normalise

    queries: list[tuple[int, str, frozenset[int] | None, str]] = []
    for item in load_set("patterns")["questions"]:
        if item.get("lang", "en") == "en":
            continue
        if item["kind"] == "no_answer":
            queries += [(side, item["question"], None, "script unrelated") for side in (0, 1)]
            continue
        names = [Path(path).name for path in item["documents"]]
        answers = [normalise(answer) for answer in item["answers"]]
        for side, agent in enumerate(agents):
            chunks = KnowledgeChunk.objects.filter(
                agent=agent, document__name__in=names, is_searchable=True
            ).values_list("pk", "text")
            expected = frozenset(
                pk for pk, text in chunks if any(answer in normalise(text) for answer in answers)
            )
            if expected:
                queries.append((side, item["question"], expected, "script question"))
                queries.append((1 - side, item["question"], None, "other Agent's script question"))
                break
    return queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-document", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--reuse", action="store_true", help="search the Agents an earlier run ingested"
    )
    parser.add_argument(
        "--cross-language",
        action="store_true",
        help="fit on the cross-language set's questions too (the patterns set's non-English ones)",
    )
    args = parser.parse_args()
    _prepare_environment()

    import django

    django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    from apps.common.errors import ServiceError
    from apps.knowledge import embedding_jobs, pipeline, relevance, services
    from apps.knowledge.search import search_chunks
    from apps.workspaces.models import Agent, Workspace

    call_command("migrate", verbosity=0)
    rng = random.Random(args.seed)
    corpus = Path(os.environ.get("CORPUS_DIR", ROOT.parent / "shared" / "corpus"))
    files = sorted(
        path
        for path in corpus.glob("*/*")
        if path.is_file() and not str(path.relative_to(corpus)).startswith("bad/")
    )
    families = sorted({_family(path) for path in files})
    half = {family: index % 2 for index, family in enumerate(families)}
    paraphrase = json.loads((ROOT / "benchmarks" / "knowledge_paraphrase.json").read_text())
    existing = list(Agent.objects.filter(workspace__name="Knowledge calibration").order_by("name"))
    if args.reuse and len(existing) == 2:
        agents = existing
    else:
        Workspace.objects.filter(name="Knowledge calibration").delete()
        workspace = Workspace.objects.create(name="Knowledge calibration")
        agents = [Agent.objects.create(workspace=workspace, name=f"Half {n}") for n in (0, 1)]

    def ingest(agent, name: str, data: bytes) -> str | None:
        try:
            document = services.document_create_from_upload(
                agent=agent, upload=SimpleUploadedFile(name, data)
            )
        except ServiceError:
            return None
        if pipeline.document_ingest(document_id=document.pk) != "ready":
            return None
        embedding_jobs.document_embed(document_id=document.pk, max_batches=100_000)
        return document.pk

    documents: list[list[str]] = [[], []]
    if agents is existing:
        documents = documents_held(agents, paraphrase)
    else:
        for path in files:
            side = half[_family(path)]
            document_id = ingest(agents[side], path.name, path.read_bytes())
            if document_id:
                documents[side].append(document_id)
        for name, markdown in paraphrase["documents"].items():
            ingest(agents[0], name, markdown.encode())
    print(f"Ingested {len(documents[0])} + {len(documents[1])} corpus documents.")

    queries = calibration_queries(
        agents, documents, paraphrase, rng, args.per_document, cross_language=args.cross_language
    )

    positives: list[tuple[float, float, str, str]] = []
    negatives: list[tuple[float, float, str, str]] = []
    groups: list[list[tuple[float, float, str, str]]] = []  # per unanswerable query
    found: dict[str, int] = {}
    asked: dict[str, int] = {}
    for side, query, expected, kind in queries:
        hits = search_chunks(agent=agents[side], query=query, limit=10, mode="hybrid")
        # Foreign Latin-script queries share the other scripts' curve (relevance.query_class).
        script = "other" if relevance.query_class(query) != "latin" else "latin"
        rows = [(hit.coverage, hit.similarity or 0.0, script, kind) for hit in hits]
        asked[kind] = asked.get(kind, 0) + 1
        if expected is not None:
            for hit, row in zip(hits, rows, strict=True):
                if hit.chunk_id in expected:
                    positives.append(row)
                    found[kind] = found.get(kind, 0) + 1
        else:
            # The three strongest candidates of an unanswerable query: what abstention must stop.
            strongest = sorted(rows, key=lambda row: -(row[0] + row[1]))[:3]
            negatives += strongest
            if strongest:
                groups.append(strongest)
    for kind, count in asked.items():
        print(
            f"  {kind}: {count} queries"
            + (
                f", answer in the top 10 for {found.get(kind, 0)}"
                if kind in found or not kind.startswith(("other", "unrelated"))
                else ""
            )
        )

    # Every kind of query weighs the same in the fit, whatever its number of examples.
    keyword = _fit([([1, p[0]], p[3]) for p in positives], [([1, n[0]], n[3]) for n in negatives])
    print(f"KEYWORD_WEIGHTS = ({keyword[0]:.1f}, {keyword[1]:.1f})")
    meaning: dict[str, np.ndarray] = {}
    for script in ("latin", "other"):
        pos = [p for p in positives if p[2] == script]
        neg = [n for n in negatives if n[2] == script]
        if not pos or not neg:
            print(f"  {script}: not enough examples ({len(pos)} / {len(neg)})")
            continue
        if script == "latin":
            meaning[script] = _fit(
                [([1, p[0], p[1]], p[3]) for p in pos], [([1, n[0], n[1]], n[3]) for n in neg]
            )
        else:
            # The English model rates texts of other scripts alike: similarity tells nothing
            # there (its fitted weight comes out negative), coverage decides.
            fitted = _fit([([1, p[0]], p[3]) for p in pos], [([1, n[0]], n[3]) for n in neg])
            meaning[script] = np.array([fitted[0], fitted[1], 0.0])
        print(f'    "{script}": ({", ".join(f"{w:.1f}" for w in meaning[script])}),')

    def probability(row, weights) -> float:
        return float(1 / (1 + np.exp(-np.dot(weights, row))))

    scorers = {
        "keyword": lambda row: probability([1, row[0]], keyword),
        "hybrid": lambda row: probability(
            [1, row[0], row[1]], meaning.get(row[2], meaning["latin"])
        ),
    }
    for label, scorer in scorers.items():
        print(f"{label}: per threshold, answers kept per kind; unanswerable queries left empty")
        for threshold in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
            kept = {
                kind: sum(scorer(p) >= threshold for p in positives if p[3] == kind)
                / max(1, sum(p[3] == kind for p in positives))
                for kind in ("sentence", "half", "paraphrase", "script question")
                if any(p[3] == kind for p in positives)
            }
            unanswerable = sum(1 for q in queries if q[2] is None)
            heard = sum(max(scorer(row) for row in group) >= threshold for group in groups)
            silent = unanswerable - heard
            by_kind = {}
            for kind in sorted({q[3] for q in queries if q[2] is None}):
                asked_kind = sum(1 for q in queries if q[2] is None and q[3] == kind)
                heard_kind = sum(
                    max(scorer(row) for row in group) >= threshold
                    for group in groups
                    if group[0][3] == kind
                )
                by_kind[kind] = (asked_kind - heard_kind) / max(asked_kind, 1)
            print(
                f"  {threshold:.2f}: "
                + ", ".join(f"{kind} {share:.3f}" for kind, share in kept.items())
                + f"; unanswerable empty {silent / max(unanswerable, 1):.3f} of {unanswerable} ("
                + ", ".join(f"{kind} {share:.2f}" for kind, share in by_kind.items())
                + ")"
            )


def _fit(positives: list[tuple[list[float], str]], negatives: list[tuple[list[float], str]]):
    """Logistic regression by Newton's method; each kind of example weighs the same in total,
    positives and negatives half each; a little L2."""
    rows = [(x, 1.0, kind) for x, kind in positives] + [(x, 0.0, kind) for x, kind in negatives]
    x = np.array([row[0] for row in rows], dtype=float)
    y = np.array([row[1] for row in rows])
    kinds: dict[tuple[float, str], int] = {}
    for _, label, kind in rows:
        kinds[(label, kind)] = kinds.get((label, kind), 0) + 1
    per_label = {label: sum(1 for key in kinds if key[0] == label) for label in (0.0, 1.0)}
    weight = np.array([0.5 / per_label[label] / kinds[(label, kind)] for _, label, kind in rows])
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        gradient = x.T @ (weight * (p - y)) + 1e-3 * w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + 1e-3 * np.eye(x.shape[1])
        w -= np.linalg.solve(hessian, gradient)
    return w


if __name__ == "__main__":
    main()
