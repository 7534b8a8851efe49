"""Knowledge relevance: does the served search find the passage that answers a question?

    uv run python benchmarks/knowledge_relevance.py [--set main|heldout] [--json [PATH]]
        [--reuse] [--smoke] [--verbose]

1. Ingests the corpus documents a question set names (benchmarks/relevance/, read in place
   from ../shared/corpus or CORPUS_DIR) for a fresh benchmark Agent the way the product does:
   `services.document_create_from_upload` queues the work and a real `celery worker` (the
   production command and environment, concurrency 1) extracts, chunks and embeds, until every
   document is ready and every chunk embedded.
2. Asks every question through the served API (`POST /v1/knowledge/search`, Django's test
   client with a real API key, limit 10) in each mode — keyword, semantic, hybrid — and, over
   the very same passages (the Agent's searchable chunks read from the database), a plain BM25
   (`rank_bm25.BM25Okapi`, lower-cased `\\w+` tokens, no stemming, chunks scoring 0 left out).
3. Judges each returned passage by substring on normalised text (benchmarks/relevance/
   README.md) and prints R@5, R@10 and MRR@10 per mode and kind as a markdown table. No-answer
   questions: how many get an empty list. When the API offers a relevance threshold (a
   `min_score` property on the search request in /v1/openapi.json), the rankings are taken with
   it at 0 and the abstention figures at the API's default, with the answerable English
   questions whose answer the default threshold removes.

It runs against BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/
agent_console_bench), created and migrated if missing, and the broker of REDIS_URL (without it,
a filesystem broker in a temporary folder). `--reuse` searches the Agent an earlier run left
ready instead of ingesting again (only after a run of the same code: its chunks and vectors are
that code's). `--smoke`: 3 documents and 5 questions, under a minute
(tests/knowledge/test_relevance_benchmark.py runs it against the test database).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/agent_console_bench"
SETS = {
    "main": ROOT / "benchmarks" / "relevance" / "questions.json",
    "heldout": ROOT / "benchmarks" / "relevance" / "heldout.json",
    # Issue 37's patterns (records, contents pages, short queries, scripts); same documents.
    "patterns": ROOT / "benchmarks" / "relevance" / "patterns.json",
}
KINDS = ("lexical", "paraphrase", "crosslingual", "no_answer")
ANSWERABLE = KINDS[:3]
MODES = ("keyword", "semantic", "hybrid")
BASELINE = "bm25"
LIMIT = 10
THRESHOLD_FIELD = "min_score"
WORKSPACE_NAME = "Knowledge relevance benchmark"
QUEUE = "knowledge-relevance-bench"
# Ingestion is an interactive task (config/celery.py routes it to its own queue): the worker
# listens to both, under names no other worker of this machine consumes.
INTERACTIVE_QUEUE = "knowledge-relevance-bench-interactive"
SMOKE_DOCUMENTS = ["html/heise.de.lithium.html", "pptx/SampleShow.pptx", "csv/test_mskanji.csv"]
SMOKE_QUESTIONS = ["m020", "m031", "m036", "m095", "m139"]


# --- question sets and judging -------------------------------------------------------------


def load_set(name: str) -> dict:
    return json.loads(SETS[name].read_text(encoding="utf-8"))


def smoke_set(question_set: dict) -> dict:
    """The tiny subset of --smoke: three small documents and five questions about them."""
    questions = [q for q in question_set["questions"] if q["id"] in SMOKE_QUESTIONS]
    return {**question_set, "documents": SMOKE_DOCUMENTS, "questions": questions}


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_NON_WORD = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """NFKC, case-folded, markdown links reduced to their text, every run of non-word
    characters one space: table pipes, line breaks and punctuation do not decide a match."""
    text = _LINK.sub(r"\1", unicodedata.normalize("NFKC", text)).casefold()
    return _NON_WORD.sub(" ", text).strip()


def answer_rank(
    question: dict, hits: list[tuple[str, str]], passages: dict[str, str], documents: dict
) -> int | None:
    """1-based rank of the first hit (chunk id, document id, both strings as the API writes
    them) that answers `question`."""
    accepted = {documents[path] for path in question["documents"] if path in documents}
    answers = [normalise(answer) for answer in question["answers"]]
    for rank, (chunk_id, document_id) in enumerate(hits, start=1):
        if document_id in accepted:
            text = passages.get(chunk_id, "")
            if any(answer in text for answer in answers):
                return rank
    return None


def summarise(ranks: list[int | None]) -> dict:
    """R@5, R@10 and MRR@10 of a list of ranks (None: not in the top 10)."""
    count = len(ranks)
    if not count:
        return {"n": 0, "r5": None, "r10": None, "mrr10": None}
    return {
        "n": count,
        "r5": sum(1 for r in ranks if r is not None and r <= 5) / count,
        "r10": sum(1 for r in ranks if r is not None and r <= 10) / count,
        "mrr10": sum(1 / r for r in ranks if r is not None and r <= 10) / count,
    }


# --- environment -----------------------------------------------------------------------------


def _prepare_environment() -> None:
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("REDIS_URL", "")
    # Shared with the worker: it reads the uploaded files and, without Redis, the broker folder.
    os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="knowledge-relevance-media-")
    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="knowledge-relevance-var-"))
    os.environ["CELERY_TASK_DEFAULT_QUEUE"] = QUEUE
    os.environ["CELERY_INTERACTIVE_QUEUE"] = INTERACTIVE_QUEUE
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # Several hundred searches a minute through one key: the benchmark is not the client the
    # rate limit is for.
    os.environ["API_RATE_LIMIT"] = "1000000/minute"
    if url.startswith("postgres"):
        import psycopg

        name = url.rsplit("/", 1)[1]
        admin = url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')


def start_worker() -> subprocess.Popen:
    """The production worker command with its environment, on the benchmark's own queue."""
    from config.worker_environment import worker_environment

    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--loglevel=WARNING",
            "--concurrency=1",
            "--pool=prefork",
            "-Q",
            f"{QUEUE},{INTERACTIVE_QUEUE}",
            "--hostname=knowledge-relevance@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=worker_environment(os.environ),
        stdout=subprocess.DEVNULL,  # its banner; warnings and errors go to stderr
        start_new_session=True,
    )


def stop_worker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


# --- ingestion -------------------------------------------------------------------------------


def corpus_dir() -> Path:
    return Path(os.environ.get("CORPUS_DIR") or ROOT.parent / "shared" / "corpus")


def create_agent():
    from apps.workspaces.models import Agent, Workspace

    Workspace.objects.filter(name=WORKSPACE_NAME).delete()
    workspace = Workspace.objects.create(name=WORKSPACE_NAME)
    return Agent.objects.create(workspace=workspace, name="Relevance")


def ingest(*, agent, paths: list[str], corpus: Path) -> dict[str, str]:
    """Upload each corpus file through the service (which queues its ingestion); returns the
    document id of each path."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.knowledge import services

    documents = {}
    for path in paths:
        data = (corpus / path).read_bytes()
        upload = SimpleUploadedFile(Path(path).name, data)
        documents[path] = str(services.document_create_from_upload(agent=agent, upload=upload).pk)
    return documents


def is_searchable(document) -> bool:
    """Ingested (or failed) and, when ready, every chunk embedded."""
    if document.status == "failed":
        return True
    return document.status == "ready" and document.embedded_chunk_count >= document.chunk_count


def wait_until_searchable(documents: dict[str, str], *, timeout: float, quiet: bool = False):
    """Poll until every document is searchable by keyword and by meaning; returns the paths
    whose ingestion failed, with their messages."""
    from apps.knowledge.models import KnowledgeDocument

    started = time.monotonic()
    last_report = started
    while True:
        rows = list(KnowledgeDocument.objects.filter(pk__in=documents.values()))
        pending = [row for row in rows if not is_searchable(row)]
        if not pending:
            break
        now = time.monotonic()
        if now - started > timeout:
            raise SystemExit(
                f"{len(pending)} documents still not searchable after {timeout:.0f} s: "
                + ", ".join(
                    f"{row.file_name} ({row.status}, {row.embedded_chunk_count}/"
                    f"{row.chunk_count} embedded)"
                    for row in pending
                )
            )
        if not quiet and now - last_report > 15:
            chunks = sum(row.chunk_count for row in rows)
            embedded = sum(row.embedded_chunk_count for row in rows)
            ready = sum(1 for row in rows if row.status != "processing")
            print(
                f"  {now - started:.0f} s: {ready}/{len(rows)} documents ingested, "
                f"{embedded}/{chunks} chunks embedded",
                flush=True,
            )
            last_report = now
        time.sleep(1)
    by_id = {value: key for key, value in documents.items()}
    return {by_id[str(row.pk)]: row.error_message for row in rows if row.status == "failed"}


def reusable_agent(paths: list[str]):
    """The Agent of an earlier run when it holds every document of `paths`, all searchable."""
    from apps.knowledge.models import KnowledgeDocument
    from apps.workspaces.models import Agent

    agent = Agent.objects.filter(workspace__name=WORKSPACE_NAME, name="Relevance").first()
    if agent is None:
        return None, {}
    rows = {row.file_name: row for row in KnowledgeDocument.objects.filter(agent=agent)}
    documents = {}
    for path in paths:
        row = rows.get(Path(path).name)
        if row is None or not is_searchable(row):
            return None, {}
        documents[path] = str(row.pk)
    return agent, documents


# --- searching -------------------------------------------------------------------------------


class SearchApi:
    """POST /v1/knowledge/search through Django's test client with a real key of the Agent."""

    def __init__(self, agent) -> None:
        from django.test import Client

        from apps.workspaces.services import api_key_create

        _key, secret = api_key_create(
            agent=agent, name="relevance benchmark", scopes=["knowledge:read"]
        )
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {secret}"}

    def threshold_field(self) -> str | None:
        """THRESHOLD_FIELD when the search request's schema in /v1/openapi.json has it."""
        response = self.client.get("/v1/openapi.json")
        if response.status_code != 200:
            return None
        schema = response.json()
        operation = schema["paths"].get("/v1/knowledge/search", {}).get("post", {})
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
        ref = body.get("schema", {}).get("$ref", "")
        properties = schema["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {})
        return THRESHOLD_FIELD if THRESHOLD_FIELD in properties.get("properties", {}) else None

    def search(self, query: str, *, mode: str, extra: dict | None = None) -> list[dict]:
        payload = {"query": query, "mode": mode, "limit": LIMIT, **(extra or {})}
        for _attempt in range(5):
            response = self.client.post(
                "/v1/knowledge/search",
                data=json.dumps(payload),
                content_type="application/json",
                headers=self.headers,
            )
            if response.status_code != 429:
                break
            time.sleep(float(response.headers.get("Retry-After", "1")))
        if response.status_code != 200:
            raise SystemExit(
                f"search {payload!r} answered {response.status_code}: {response.content[:300]!r}"
            )
        return response.json()["data"]


def bm25_search(agent, questions: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """Plain BM25 over the Agent's searchable chunks: top LIMIT with a positive score."""
    import numpy as np
    from rank_bm25 import BM25Okapi

    from apps.knowledge.models import KnowledgeChunk

    rows = list(
        KnowledgeChunk.objects.filter(agent=agent, is_searchable=True)
        .order_by("pk")
        .values_list("pk", "document_id", "text")
    )
    index = BM25Okapi([re.findall(r"\w+", text.lower()) for _pk, _doc, text in rows])
    results = {}
    for question in questions:
        scores = index.get_scores(re.findall(r"\w+", question["question"].lower()))
        order = np.argsort(-scores, kind="stable")[:LIMIT]
        results[question["id"]] = [
            (str(rows[i][0]), str(rows[i][1])) for i in order if scores[i] > 0
        ]
    return results


def evaluate(*, agent, question_set: dict, documents: dict[str, str], quiet: bool = False):
    """Ask every question in every mode and score the answers; returns the report dict."""
    from apps.knowledge.models import KnowledgeChunk

    questions = question_set["questions"]
    api = SearchApi(agent)
    field = api.threshold_field()
    passages = {
        str(pk): normalise(text)
        for pk, text in KnowledgeChunk.objects.filter(agent=agent, is_searchable=True).values_list(
            "pk", "text"
        )
    }
    passage_count = len(passages)
    by_document: dict[str, list[str]] = {}
    for pk, document_id in KnowledgeChunk.objects.filter(
        agent=agent, is_searchable=True
    ).values_list("pk", "document_id"):
        by_document.setdefault(str(document_id), []).append(passages[str(pk)])
    unreachable = [
        q["id"]
        for q in questions
        if q["kind"] != "no_answer"
        and not any(
            normalise(answer) in text
            for path in q["documents"]
            for text in by_document.get(documents.get(path, ""), [])
            for answer in q["answers"]
        )
    ]

    unknown: set[str] = set()

    def hits_of(data: list[dict]) -> list[tuple[str, str]]:
        hits = [(str(hit["chunk_id"]), str(hit["document_id"])) for hit in data]
        for (chunk_id, _document_id), hit in zip(hits, data, strict=True):
            if chunk_id not in passages:
                # A passage the chunk table does not hold: judged on the text the API returns.
                text = hit.get("text") or hit.get("content")
                if text:
                    passages[chunk_id] = normalise(text)
                else:
                    unknown.add(chunk_id)
        return hits

    ranked: dict[str, dict[str, dict]] = {}  # mode -> question id -> {rank, empty, top}
    started = time.perf_counter()
    for mode in MODES:
        ranked[mode] = {}
        at_default: dict[str, dict] = {}
        for question in questions:
            data = api.search(
                question["question"], mode=mode, extra={field: 0.0} if field else None
            )
            hits = hits_of(data)
            ranked[mode][question["id"]] = _outcome(question, hits, data, passages, documents)
            if field:
                data = api.search(question["question"], mode=mode)
                hits = hits_of(data)
                at_default[question["id"]] = _outcome(question, hits, data, passages, documents)
        if field:
            ranked[f"{mode}@default"] = at_default
    search_seconds = time.perf_counter() - started
    ranked[BASELINE] = {
        qid: _outcome(next(q for q in questions if q["id"] == qid), hits, None, passages, documents)
        for qid, hits in bm25_search(agent, questions).items()
    }
    report = _report(question_set, ranked, field, unreachable, passage_count, search_seconds)
    report["unknown_chunks"] = len(unknown)
    return report


def _outcome(question, hits, data, passages, documents) -> dict:
    rank = (
        None
        if question["kind"] == "no_answer"
        else answer_rank(question, hits, passages, documents)
    )
    top = data[0]["score"] if data else None
    return {"rank": rank, "empty": not hits, "top_score": top}


def _report(question_set, ranked, field, unreachable, passages, search_seconds) -> dict:
    questions = question_set["questions"]
    kind_of = {q["id"]: q["kind"] for q in questions}
    english = {q["id"] for q in questions if q["lang"] == "en"}
    lang_of = {q["id"]: q["lang"] for q in questions}
    metrics = {}
    for mode in [*MODES, BASELINE]:
        outcomes = ranked[mode]
        answerable = [qid for qid in outcomes if kind_of[qid] != "no_answer"]
        metrics[mode] = {
            kind: summarise([outcomes[qid]["rank"] for qid in answerable if kind_of[qid] == kind])
            for kind in ANSWERABLE
        }
        metrics[mode]["all"] = summarise([outcomes[qid]["rank"] for qid in answerable])
        metrics[mode]["english"] = summarise(
            [outcomes[qid]["rank"] for qid in answerable if qid in english]
        )
        metrics[mode]["other_language"] = summarise(
            [outcomes[qid]["rank"] for qid in answerable if qid not in english]
        )
        metrics[mode]["by_language"] = {
            lang: summarise([outcomes[qid]["rank"] for qid in answerable if lang_of[qid] == lang])
            for lang in sorted({lang_of[qid] for qid in answerable})
        }
    abstention = {}
    for mode in [*MODES, BASELINE]:
        default = ranked.get(f"{mode}@default", ranked[mode])
        no_answer = [qid for qid in default if kind_of[qid] == "no_answer"]
        answerable = [qid for qid in default if kind_of[qid] != "no_answer"]
        lost = [
            qid
            for qid in answerable
            if qid in english
            and ranked[mode][qid]["rank"] is not None
            and default[qid]["rank"] is None
        ]
        lost_any = [
            qid
            for qid in answerable
            if ranked[mode][qid]["rank"] is not None and default[qid]["rank"] is None
        ]
        tops_answered = [
            ranked[mode][qid]["top_score"]
            for qid in answerable
            if ranked[mode][qid]["rank"] == 1 and ranked[mode][qid]["top_score"] is not None
        ]
        tops_none = [
            ranked[mode][qid]["top_score"]
            for qid in no_answer
            if ranked[mode][qid]["top_score"] is not None
        ]
        abstention[mode] = {
            "no_answer": len(no_answer),
            "no_answer_empty": sum(1 for qid in no_answer if default[qid]["empty"]),
            "answerable_empty": sum(1 for qid in answerable if default[qid]["empty"]),
            "english_answers_lost": lost,
            "answers_lost": lost_any,
            "median_top_score_answered": statistics.median(tops_answered)
            if tops_answered
            else None,
            "median_top_score_no_answer": statistics.median(tops_none) if tops_none else None,
        }
    counts = {kind: sum(1 for q in questions if q["kind"] == kind) for kind in KINDS}
    return {
        "set": question_set.get("name", ""),
        "questions": counts,
        "documents": len(question_set["documents"]),
        "passages": passages,
        "threshold_field": field,
        "unreachable": unreachable,
        "search_seconds": round(search_seconds, 1),
        "metrics": metrics,
        "abstention": abstention,
        "per_question": {
            mode: {qid: outcome["rank"] for qid, outcome in outcomes.items()}
            for mode, outcomes in ranked.items()
        },
    }


# --- output ----------------------------------------------------------------------------------


def _f(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def render_markdown(report: dict) -> str:
    counts = report["questions"]
    label = {BASELINE: "plain BM25"}
    lines = [
        f"Set `{report['set']}`: {sum(counts.values())} questions ({counts['lexical']} lexical, "
        f"{counts['paraphrase']} paraphrase, {counts['crosslingual']} other-language/colloquial, "
        f"{counts['no_answer']} no answer) over {report['documents']} documents, "
        f"{report['passages']} passages.",
        "",
        "| mode | lexical R@5 | paraphrase R@5 | other-language / colloquial R@5 | all R@5 | "
        "all R@10 | all MRR@10 | English R@5 | non-English R@5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in [*MODES, BASELINE]:
        m = report["metrics"][mode]
        lines.append(
            f"| {label.get(mode, mode)} | {_f(m['lexical']['r5'])} | {_f(m['paraphrase']['r5'])} "
            f"| {_f(m['crosslingual']['r5'])} | **{_f(m['all']['r5'])}** | {_f(m['all']['r10'])} "
            f"| {_f(m['all']['mrr10'])} | {_f(m['english']['r5'])} "
            f"| {_f(m['other_language']['r5'])} |"
        )
    lines += [
        "",
        "| mode | kind | R@5 | R@10 | MRR@10 |",
        "|---|---|---|---|---|",
    ]
    for mode in [*MODES, BASELINE]:
        for kind in ANSWERABLE:
            m = report["metrics"][mode][kind]
            lines.append(
                f"| {label.get(mode, mode)} | {kind} ({m['n']}) | {_f(m['r5'])} | {_f(m['r10'])} "
                f"| {_f(m['mrr10'])} |"
            )
    field = report["threshold_field"]
    where = f"at the default `{field}`" if field else "(the API has no threshold)"
    lines += [
        "",
        f"| mode | no-answer questions with an empty list {where} | answerable questions "
        "with an empty list | English answers lost to the threshold | median top score, "
        "answered at rank 1 | median top score, no-answer |",
        "|---|---|---|---|---|---|",
    ]
    for mode in [*MODES, BASELINE]:
        a = report["abstention"][mode]
        lost = ", ".join(a["english_answers_lost"]) or "none"
        lines.append(
            f"| {label.get(mode, mode)} | {a['no_answer_empty']}/{a['no_answer']} "
            f"| {a['answerable_empty']} | {lost if field or mode == BASELINE else '—'} "
            f"| {_f(a['median_top_score_answered'])} | {_f(a['median_top_score_no_answer'])} |"
        )
    lines += [
        "",
        "Answers found (in the top 10 at `min_score` 0) but under the default threshold, any "
        "language: "
        + "; ".join(
            f"{label.get(mode, mode)} {', '.join(report['abstention'][mode]['answers_lost']) or 'none'}"
            for mode in MODES
        ),
        "",
        "R@5 per question language: "
        + "; ".join(
            f"{lang} ({report['metrics']['hybrid']['by_language'][lang]['n']}) "
            + " / ".join(
                _f(report["metrics"][mode]["by_language"][lang]["r5"])
                for mode in [*MODES, BASELINE]
            )
            for lang in report["metrics"]["hybrid"]["by_language"]
        )
        + " (keyword / semantic / hybrid / plain BM25)",
    ]
    if report.get("unknown_chunks"):
        lines += [
            "",
            f"{report['unknown_chunks']} returned chunk ids are not searchable chunks of the Agent "
            "and came without text: they were counted as misses.",
        ]
    if report["unreachable"]:
        lines += [
            "",
            "Questions whose answer lies in no passage of their document (a miss for every "
            f"mode): {', '.join(report['unreachable'])}",
        ]
    return "\n".join(lines)


def render_misses(report: dict, question_set: dict) -> str:
    lines = []
    for question in question_set["questions"]:
        if question["kind"] == "no_answer":
            continue
        ranks = {mode: report["per_question"][mode][question["id"]] for mode in [*MODES, BASELINE]}
        if ranks["hybrid"] is None or ranks["hybrid"] > 5:
            shown = ", ".join(f"{mode} {rank or '-'}" for mode, rank in ranks.items())
            lines.append(
                f"  {question['id']} {question['kind']:12} {question['question']!r}: {shown}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="main")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the report as JSON to PATH (stdout without a path)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="search the Agent an earlier run left ready, ingest nothing",
    )
    parser.add_argument("--smoke", action="store_true", help="3 documents, 5 questions")
    parser.add_argument("--verbose", action="store_true", help="list hybrid's misses")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for ingestion")
    args = parser.parse_args()
    _prepare_environment()

    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    call_command("migrate", verbosity=0)
    setup_test_environment()  # the test client's host is allowed, nothing else changes
    question_set = load_set(args.set)
    if args.smoke:
        question_set = smoke_set(question_set)
    question_set["name"] = args.set + (" (smoke)" if args.smoke else "")
    log = sys.stderr if args.json == "-" else sys.stdout

    agent, documents = reusable_agent(question_set["documents"]) if args.reuse else (None, {})
    if agent is None:
        worker = start_worker()
        try:
            started = time.perf_counter()
            agent = create_agent()
            documents = ingest(agent=agent, paths=question_set["documents"], corpus=corpus_dir())
            failed = wait_until_searchable(documents, timeout=args.timeout)
            print(
                f"Ingested and embedded {len(documents)} documents in "
                f"{time.perf_counter() - started:.0f} s.",
                file=log,
            )
            for path, message in failed.items():
                print(f"  {path} failed: {message}", file=log)
        finally:
            stop_worker(worker)
    report = evaluate(agent=agent, question_set=question_set, documents=documents)
    if args.json:
        text = json.dumps(report, indent=1, ensure_ascii=False)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if args.json != "-":
        print(render_markdown(report))
        if args.verbose:
            print("\nHybrid misses (rank per mode, - for none in the top 10):")
            print(render_misses(report, question_set))


if __name__ == "__main__":
    main()
