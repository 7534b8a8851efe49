"""Knowledge search quality and latency.

    uv run python benchmarks/knowledge_search.py [--chunks 100000] [--runs 8]

1. Ingests every readable file of the corpus (../shared/corpus, or CORPUS_DIR) for a fresh
   benchmark Agent through the real services and pipeline, then runs the relevance set of
   benchmarks/knowledge_relevance.json: recall@5 (the expected passage is in the top 5) and
   MRR (mean of 1/rank of the expected passage).
   Then the paraphrase set (benchmarks/knowledge_paraphrase.json, questions that share few
   words with their answer) in each mode: keyword, semantic, hybrid.
2. Bulk-loads synthetic chunks (COPY; see _add_synthetic_chunks), each with its vector in
   pgvector's column, into the same Agent until it has --chunks of them, builds the keyword
   and HNSW indexes after the load (timed), and times the search service per mode over a mix
   of very common, common, medium, rare and natural-language queries plus the relevance
   queries: p50/p95 and the number of SQL queries per search.

    uv run python benchmarks/knowledge_search.py --chunks 1000000   # 15-60 minutes
    uv run python benchmarks/knowledge_search.py --reuse --http 20  # then through HTTP

   Each mode's timing also gives the searches' time on a CPU (this process's thread and its
   PostgreSQL backend, from /proc/.../schedstat) and the time they waited for one, so that a
   figure taken on a loaded machine says how much of it is the load.
3. With --http SECONDS: gunicorn as the README runs it (2 workers x 4 threads) serves
   POST /v1/knowledge/search to --connections (8) clients per mode (keyword, hybrid, semantic,
   and each of them with a question never asked before on every request, so every one embeds
   its query), and how long the first keyword search of a fresh worker took: requests per second, p50/p95/p99, the slowest, and the CPU a request costs the web
   workers and PostgreSQL.

It runs against BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/
agent_console_bench), created and migrated if missing; never against the test databases.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/agent_console_bench"
PARAPHRASE = json.loads((ROOT / "benchmarks" / "knowledge_paraphrase.json").read_text())


def _prepare_environment() -> None:
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("REDIS_URL", "")
    os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="knowledge-bench-")
    # Embed tasks that ingestion queues land in a throwaway broker folder (the benchmark embeds
    # in process), never in the project's var/.
    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="knowledge-bench-var-"))
    # Metric samples (every search records its duration) go to a folder that must exist.
    metrics_dir = Path(
        os.environ.get("PROMETHEUS_MULTIPROC_DIR", Path(os.environ["VAR_DIR"]) / "prometheus")
    )
    metrics_dir.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if url.startswith("postgres"):
        import psycopg

        name = url.rsplit("/", 1)[1]
        admin = url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=8, help="passes over the queries")
    parser.add_argument(
        "--reuse", action="store_true", help="time the chunks an earlier run loaded, load nothing"
    )
    parser.add_argument(
        "--http",
        type=float,
        default=0,
        metavar="SECONDS",
        help="then load POST /v1/knowledge/search through gunicorn for SECONDS per mode",
    )
    parser.add_argument("--connections", type=int, default=8, help="HTTP clients (--http)")
    parser.add_argument("--port", type=int, default=0, help="gunicorn's port (0: a free one)")
    args = parser.parse_args()
    _prepare_environment()

    import django

    django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection

    from apps.common.errors import ServiceError
    from apps.knowledge import embedding_jobs, pipeline, services
    from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
    from apps.knowledge.search import MODES
    from apps.workspaces.models import Agent, Workspace

    call_command("migrate", verbosity=0)
    corpus = Path(os.environ.get("CORPUS_DIR", ROOT.parent / "shared" / "corpus"))
    relevance = json.loads((ROOT / "benchmarks" / "knowledge_relevance.json").read_text())

    existing = Agent.objects.filter(workspace__name="Knowledge benchmark", name="Bench").first()
    if args.reuse and existing is not None:
        print("--reuse: timing the Agent loaded by an earlier run")
        total = _time_searches(existing, relevance, args.runs)
        # The corpus documents of that run, found again by their file names.
        names = dict(
            KnowledgeDocument.objects.filter(agent=existing).values_list("file_name", "pk")
        )
        by_file = {
            item["file"]: names[Path(item["file"]).name]
            for item in relevance["queries"]
            if Path(item["file"]).name in names
        }
        for mode in ("keyword", "hybrid"):
            _evaluate(existing, by_file, relevance, f"Relevance with {total} chunks", mode)
        if args.http:
            _http_load(existing, relevance, args)
        return
    Workspace.objects.filter(name="Knowledge benchmark").delete()
    workspace = Workspace.objects.create(name="Knowledge benchmark")
    agent = Agent.objects.create(workspace=workspace, name="Bench")

    started = time.perf_counter()
    by_file: dict[str, str] = {}
    for path in sorted(corpus.glob("*/*")):
        relative = str(path.relative_to(corpus))
        if relative.startswith("bad/") or not path.is_file():
            continue
        upload = SimpleUploadedFile(path.name, path.read_bytes())
        try:
            document = services.document_create_from_upload(agent=agent, upload=upload)
        except ServiceError as exc:
            print(f"  skipped {relative}: {exc.message}")
            continue
        outcome = pipeline.document_ingest(document_id=document.pk)
        by_file[relative] = document.pk
        if outcome != "ready":
            message = KnowledgeDocument.objects.get(pk=document.pk).error_message
            print(f"  {relative}: {outcome} ({message})")
    corpus_chunks = KnowledgeChunk.objects.filter(agent=agent).count()
    print(
        f"Ingested {len(by_file)} corpus files into {corpus_chunks} chunks "
        f"in {time.perf_counter() - started:.1f} s ({connection.vendor})."
    )

    embed_start = time.perf_counter()
    for document_id in by_file.values():
        embedding_jobs.document_embed(document_id=document_id, max_batches=100_000)
    print(f"Embedded the corpus chunks in {time.perf_counter() - embed_start:.1f} s.")
    for mode in ("keyword", "hybrid"):
        _evaluate(agent, by_file, relevance, "Relevance (corpus only)", mode)
    paraphrase_agent = _paraphrase_agent(workspace)
    for mode in MODES:
        print(f"Paraphrase set, {mode}: recall@5 {_paraphrase_recall(paraphrase_agent, mode):.3f}")

    missing = args.chunks - KnowledgeChunk.objects.filter(agent=agent).count()
    if missing > 0:
        _add_synthetic_chunks(agent, missing)

    total = _time_searches(agent, relevance, args.runs)
    for mode in ("keyword", "hybrid"):
        _evaluate(agent, by_file, relevance, f"Relevance with {total} chunks", mode)
    if args.http:
        _http_load(agent, relevance, args)


def _evaluate(agent, by_file: dict[str, str], relevance: dict, label: str, mode: str) -> None:
    """recall@5 and MRR of the relevance set in one mode, printing every miss."""
    from apps.knowledge.models import KnowledgeChunk
    from apps.knowledge.search import search_chunks

    ranks = []
    for item in relevance["queries"]:
        hits = search_chunks(agent=agent, query=item["query"], limit=5, mode=mode)
        rank = None
        texts = dict(
            KnowledgeChunk.objects.filter(pk__in=[h.chunk_id for h in hits]).values_list(
                "pk", "text"
            )
        )
        for position, hit in enumerate(hits, start=1):
            if hit.document_id == by_file.get(item["file"]) and _collapse(
                item["expect"]
            ) in _collapse(texts[hit.chunk_id]):
                rank = position
                break
        ranks.append(rank)
        if rank != 1:
            print(f"    {item['query']!r}: expected passage at rank {rank}")
    found = [r for r in ranks if r]
    recall = len(found) / len(ranks)
    mrr = sum(1 / r for r in found) / len(ranks)
    print(f"{label}, {mode}: recall@5 {recall:.3f}, MRR {mrr:.3f} over {len(ranks)} queries")


def _time_searches(agent, relevance: dict, runs: int) -> int:
    """p50/p95 per mode and kind of query, and the SQL queries per search.

    Beside the wall-clock time, each search's time on a CPU — this thread's and its PostgreSQL
    backend's, from the kernel's scheduler statistics (/proc/.../schedstat, nanoseconds) — and
    the time both waited for a CPU: on a shared, loaded machine the wall clock is mostly that
    wait, and on-CPU time is what the search costs (what a quiet machine would show, about)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.knowledge import embeddings
    from apps.knowledge.models import KnowledgeChunk
    from apps.knowledge.search import search_chunks

    args_runs = runs
    total = KnowledgeChunk.objects.filter(agent=agent).count()
    started = time.perf_counter()
    search_chunks(agent=agent, query="warm up", limit=10, mode="hybrid")
    print(
        f"First hybrid search (model load + the Agent's sign bits into memory): "
        f"{(time.perf_counter() - started) * 1000:.0f} ms"
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    queries = _timed_queries(relevance)
    for query, _ in queries:  # warm the caches once
        search_chunks(agent=agent, query=query, limit=10)
    # Hybrid with a query the process has not embedded before (the cache emptied before each).
    for mode in ("keyword", "hybrid", "semantic", "hybrid, new query"):
        timings: dict[str, list[float]] = {}
        cpu: list[float] = []
        waited: list[float] = []
        counts = set()
        for _ in range(args_runs):
            for query, kind in queries:
                if mode.endswith("new query"):
                    embeddings._query_vectors.clear()
                with CaptureQueriesContext(connection) as captured:
                    before = _schedstat("thread-self"), _schedstat(backend)
                    started = time.perf_counter()
                    search_chunks(agent=agent, query=query, limit=10, mode=mode.split(",")[0])
                    elapsed = (time.perf_counter() - started) * 1000
                    after = _schedstat("thread-self"), _schedstat(backend)
                timings.setdefault(kind, []).append(elapsed)
                timings.setdefault("all", []).append(elapsed)
                cpu.append(sum(a[0] - b[0] for a, b in zip(after, before, strict=True)) / 1e6)
                waited.append(sum(a[1] - b[1] for a, b in zip(after, before, strict=True)) / 1e6)
                counts.add(len(captured))
        for kind, values in timings.items():
            print(
                f"{mode:8} {kind:7} over {total} chunks ({len(values)} searches): "
                f"{_percentiles(values)}"
            )
        print(f"{mode:8} on a CPU (this thread + its PostgreSQL backend): {_percentiles(cpu)}")
        print(f"{mode:8} waiting for a CPU (both): {_percentiles(waited)}")
        print(f"{mode:8} queries per search: {sorted(counts)}")
    print(f"load average after timing: {' / '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return total


def _schedstat(task: int | str) -> tuple[int, int]:
    """(ns on a CPU, ns waiting for one) of a task so far: "thread-self" or a local process id
    (0, 0 when unreadable: a database on another machine)."""
    try:
        with open(f"/proc/{task}/schedstat") as stat:
            running, waiting, _ = stat.read().split()
    except (OSError, ValueError):
        return 0, 0
    return int(running), int(waiting)


def _percentiles(values: list[float]) -> str:
    values = sorted(values)
    p50 = statistics.median(values)
    p95 = values[max(0, int(len(values) * 0.95) - 1)]
    return f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {values[-1]:.1f} ms"


def _http_load(agent, relevance: dict, args) -> None:
    """The served search under load: gunicorn as the README runs it (2 workers x 4 threads) on
    the benchmark's database, `--connections` clients each sending the timed queries in turn
    (from different starting points) for `--http` seconds per mode, after a warm-up in which
    every worker has loaded the model. Prints requests per second, p50/p95/p99 and the slowest.
    The clients are threads of this process (the Python loop of benchmarks/api_lists.py): a
    request costs them a small part of a millisecond of CPU, on the same cores as the server."""
    import http.client
    import socket
    import threading
    from urllib.request import Request, urlopen

    from django.db import connection

    from apps.workspaces.services.api_keys import api_key_create

    _, key = api_key_create(agent=agent, name="search bench", scopes=["knowledge:read"])
    queries = [query for query, _ in _timed_queries(relevance)]
    env = {
        **os.environ,
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "API_RATE_LIMIT": "100000000/minute",  # measured, never refused
        "LOG_LEVEL": "WARNING",
        "DEBUG": "0",
    }
    connection.close()
    if not args.port:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
    command = [
        sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", "2", "--threads", "4",
        "--bind", f"127.0.0.1:{args.port}", "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{args.port}/v1/knowledge/search"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def body(query: str, mode: str) -> bytes:
        return json.dumps({"query": query, "limit": 10, "mode": mode, "min_score": 0}).encode()

    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                # Up when a cheap API request (the document list) answers; then the first
                # search of the fresh worker is timed (what it loads on the way).
                probe = Request(
                    f"http://127.0.0.1:{args.port}/v1/knowledge?limit=1", headers=headers
                )
                with urlopen(probe, timeout=30) as response:
                    ready = response.status == 200
                if ready:
                    request = Request(url, data=body(queries[0], "keyword"), headers=headers)
                    started = time.perf_counter()
                    with urlopen(request, timeout=30) as response:
                        response.read()
                    print(
                        "HTTP first keyword search of a fresh process (once it answers): "
                        f"{(time.perf_counter() - started) * 1000:.1f} ms",
                        flush=True,
                    )
                    break
            except OSError as error:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"gunicorn did not answer: {error}") from error
                time.sleep(0.3)

        def load(mode: str, seconds: float) -> list[float]:
            # "..., new queries": each request's question carries a number no request asked
            # before, so every search embeds its query (the process's cache never answers) and
            # reads statistics for a term no search read.
            fresh = mode.endswith("new queries")
            mode = mode.split(",")[0]
            stop = time.monotonic() + seconds
            latencies: list[list[float]] = [[] for _ in range(args.connections)]
            failures: list[str] = []

            def client(index: int) -> None:
                conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
                turn = index * 5
                while time.monotonic() < stop and not failures:
                    query = queries[turn % len(queries)]
                    if fresh:
                        query = f"{query} {next(asked)}"
                    payload = body(query, mode)
                    turn += 1
                    started = time.perf_counter()
                    conn.request("POST", "/v1/knowledge/search", payload, headers)
                    response = conn.getresponse()
                    response.read()
                    if response.status != 200:
                        failures.append(f"{response.status} for {payload!r}")
                    latencies[index].append((time.perf_counter() - started) * 1000)

            threads = [
                threading.Thread(target=client, args=(index,)) for index in range(args.connections)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if failures:
                raise SystemExit(f"failed requests: {failures[:3]}")
            return sorted(sum(latencies, []))

        print(
            f"HTTP: POST /v1/knowledge/search, gunicorn 2 workers x 4 threads, "
            f"{args.connections} connections, {len(queries)} queries in turn, limit 10"
        )
        asked = itertools.count(int(time.time()))  # never the same number twice, run after run
        for mode in (
            "keyword",
            "hybrid",
            "semantic",
            "keyword, new queries",
            "hybrid, new queries",
            "semantic, new queries",
        ):
            load(mode, min(3.0, args.http))  # every worker thread warmed (model, statements)
            load_before = os.getloadavg()[0]
            before = [_cpu_seconds(pids) for pids in _server_processes(server.pid)]
            values = load(mode, args.http)
            # Listed again after the load: a web thread's connection past CONN_MAX_AGE is
            # replaced by a new backend during a run (its CPU counts whole; the closed one's
            # since the first reading is lost, a small undercount rather than a negative).
            after = [_cpu_seconds(pids) for pids in _server_processes(server.pid)]
            cpu = [
                sum(used - earlier.get(pid, 0.0) for pid, used in later.items())
                * 1000
                / max(len(values), 1)
                for earlier, later in zip(before, after, strict=True)
            ]
            rate = len(values) / args.http
            p = {
                share: values[min(len(values) - 1, int(len(values) * share))]
                for share in (0.5, 0.95, 0.99)
            }
            print(
                f"HTTP {mode:8} {rate:6.1f} req/s ({len(values)} requests in {args.http:g} s): "
                f"p50 {p[0.5]:.1f} ms, p95 {p[0.95]:.1f} ms, p99 {p[0.99]:.1f} ms, "
                f"max {values[-1]:.1f} ms, over 1 s: {sum(v > 1000 for v in values)}; CPU a "
                f"request: gunicorn {cpu[0]:.1f} ms + PostgreSQL {cpu[1]:.1f} ms "
                f"(load {load_before:.2f} -> {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    finally:
        server.terminate()
        server.wait(timeout=30)


def _server_processes(server_pid: int) -> tuple[list[int], list[int]]:
    """The gunicorn workers, and the PostgreSQL backends connected to the benchmark's database
    (the workers' persistent connections) when the server runs on this machine."""
    from django.db import connection

    try:
        with open(f"/proc/{server_pid}/task/{server_pid}/children") as children:
            web = [int(pid) for pid in children.read().split()]
    except OSError:
        web = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        database = [row[0] for row in cursor.fetchall()]
    connection.close()
    return web, database


def _cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU each process used so far (a process gone or unreadable is left out)."""
    used = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime (fields 14 and 15)
        used[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used


# Real embeddings the synthetic chunks' vectors are drawn around (_add_synthetic_chunks).
BASE_VECTORS = 256

# Words planted in the synthetic chunks at chosen frequencies, so the timed queries cover a
# very common term (in half the chunks), common (20 %), medium (1 %) and rare (0.01 %) ones.
PLANTED = {"service": 0.5, "account": 0.2, "invoice": 0.01, "warranty": 0.01, "zeppelin": 0.0001}


def _timed_queries(relevance: dict) -> list[tuple[str, str]]:
    queries = [(item["query"], "corpus") for item in relevance["queries"]]
    queries += [
        ("service", "common"),
        ("account", "common"),
        ("service account", "common"),
        ("invoice", "medium"),
        ("warranty invoice", "medium"),
        ("invoice service", "medium"),
        ("zeppelin", "rare"),
        ("zeppelin service", "rare"),
        ("how do I get my money back", "natural"),
        ("what happens to my account data", "natural"),
    ]
    return queries


def _paraphrase_agent(workspace):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.knowledge import embedding_jobs, pipeline, services
    from apps.workspaces.models import Agent

    agent = Agent.objects.create(workspace=workspace, name="Paraphrase")
    for name, markdown in PARAPHRASE["documents"].items():
        upload = SimpleUploadedFile(name, markdown.encode())
        document = services.document_create_from_upload(agent=agent, upload=upload)
        pipeline.document_ingest(document_id=document.pk)
        embedding_jobs.document_embed(document_id=document.pk, max_batches=10_000)
    return agent


def _paraphrase_recall(agent, mode: str) -> float:
    from apps.knowledge.search import search_chunks

    found = 0
    for item in PARAPHRASE["questions"]:
        hits = search_chunks(agent=agent, query=item["question"], limit=5, mode=mode)
        found += item["heading"] in [hit.heading_path[-1] for hit in hits if hit.heading_path]
    return found / len(PARAPHRASE["questions"])


def _add_synthetic_chunks(agent, missing: int) -> None:
    """Bulk-load `missing` chunks into one ready document with PostgreSQL's COPY.

    Text: 40-90 words drawn with a Zipf-like law from a 30,000-word vocabulary, plus the
    PLANTED words at their frequencies. Vectors: not computed by the model (a million would
    take hours on 2 cores): each chunk gets one of 256 real embeddings of synthetic texts plus
    noise, normalised (one window), which costs the search what real vectors cost; fewer when
    fewer chunks are missing (one per chunk: the smoke run's few dozen, not 256 model runs of
    a 256-piece window each, half a minute of CPU). With pgvector
    the vector column is filled as well and the HNSW index built after the load (timed).
    """
    import numpy as np
    from django.db import connection

    from apps.knowledge import embeddings
    from apps.knowledge.models import KnowledgeContentVersion, KnowledgeDocument

    if connection.vendor != "postgresql":
        raise SystemExit("--chunks beyond the corpus needs PostgreSQL (BENCH_DATABASE_URL)")
    started = time.perf_counter()
    rng = np.random.default_rng(7)
    syllables = ["ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "de", "ph", "or", "an", "el"]
    vocabulary = sorted(
        {"".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(60_000)}
    )[:30_000]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    filler = KnowledgeDocument.objects.create(
        agent=agent,
        name="Synthetic filler",
        source_type="file",
        status="ready",
        language="english",
    )
    version = KnowledgeContentVersion.objects.create(
        document=filler, markdown="(synthetic)", sha256="0" * 64
    )

    def text_of(words: np.ndarray) -> str:
        picked = [vocabulary[i] for i in words]
        for word, share in PLANTED.items():
            if rng.random() < share:
                picked.insert(int(rng.integers(0, len(picked))), word)
        return " ".join(picked)

    base_texts = [
        text_of(rng.choice(len(vocabulary), size=60, p=weights))
        for _ in range(min(BASE_VECTORS, missing))
    ]
    base = embeddings.embed_texts(base_texts)
    batch = 50_000
    # Bulk-load practice: the keyword indexes are dropped for the COPY and built again after it,
    # with the very statements the migrations run (several times faster than row-by-row upkeep).
    search_index = next(
        statement
        for statement in importlib.import_module(
            "apps.knowledge.migrations.0003_hybrid_search"
        ).POSTGRES_FORWARD
        if statement.startswith("CREATE INDEX knowledge_chunk_search")
    )
    plain_search_index = importlib.import_module(
        "apps.knowledge.migrations.0004_keyword_index_and_late_pgvector"
    ).PLAIN_KEYWORD_INDEX
    # With pgvector the vector column is filled too and its HNSW index built after the COPY,
    # so semantic search at a million is measured over a million vectors.
    with_vectors = embeddings.pgvector_enabled()
    vector_index = next(
        statement
        for statement in importlib.import_module(
            "apps.knowledge.migrations.0003_hybrid_search"
        ).PGVECTOR_FORWARD
        if statement.startswith("CREATE INDEX knowledge_chunk_vector")
    )
    columns = (
        "version_id, document_id, agent_id, heading_path, text, position, search_config, "
        "is_searchable, embedding, embedding_bits, embedding_model"
        + (", embedding_vector" if with_vectors else "")
    )
    key = embeddings.embedding_key()
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS knowledge_chunk_search")
        cursor.execute("DROP INDEX IF EXISTS knowledge_chunk_search_plain")
        cursor.execute("DROP INDEX IF EXISTS knowledge_chunk_vector")
        for start in range(0, missing, batch):
            size = min(batch, missing - start)
            vectors = base[rng.integers(0, len(base), size=size)] + rng.normal(
                0, 0.03, size=(size, embeddings.DIMENSIONS)
            ).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            halves = vectors.astype("<f2")
            bits = np.packbits(vectors > 0, axis=1)
            lengths = rng.integers(40, 91, size=size)
            words = rng.choice(len(vocabulary), size=int(lengths.sum()), p=weights)
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            with cursor.cursor.copy(f"COPY knowledge_chunk ({columns}) FROM STDIN") as copy:
                for n in range(size):
                    row = [
                        version.pk,
                        filler.pk,
                        agent.pk,
                        json.dumps([f"Section {start + n}"]),
                        text_of(words[offsets[n] : offsets[n + 1]]),
                        start + n,
                        "english",
                        True,
                        halves[n].tobytes(),
                        bits[n].tobytes(),
                        key,
                    ]
                    if with_vectors:
                        row.append(embeddings.vector_literal(vectors[n]))
                    copy.write_row(row)
            print(f"  {start + size} / {missing} chunks", flush=True)
        index_started = time.perf_counter()
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute(search_index)
        cursor.execute(plain_search_index)
        print(f"  keyword indexes built in {time.perf_counter() - index_started:.1f} s", flush=True)
        if with_vectors:
            index_started = time.perf_counter()
            # The graph of a million 384-dimension vectors is about 2.3 GB: built in memory
            # (pgvector says when it no longer fits and goes on several times slower).
            cursor.execute("SET maintenance_work_mem = '3GB'")
            cursor.execute(vector_index)
            print(
                f"  HNSW index of {missing} vectors built in "
                f"{time.perf_counter() - index_started:.1f} s",
                flush=True,
            )
        KnowledgeDocument.objects.filter(pk=filler.pk).update(
            current_version=version, chunk_count=missing, embedded_chunk_count=missing
        )
        cursor.execute("VACUUM ANALYZE knowledge_chunk")
        cursor.execute("ANALYZE knowledge_document")
    print(f"Added {missing} synthetic chunks in {time.perf_counter() - started:.1f} s.")


if __name__ == "__main__":
    main()
