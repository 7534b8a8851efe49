"""Knowledge search quality and latency.

    uv run python benchmarks/knowledge_search.py [--chunks 100000] [--runs 8]

1. Ingests every readable file of the corpus (../shared/corpus, or CORPUS_DIR) for a fresh
   benchmark Agent through the real services and pipeline, then runs the relevance set of
   benchmarks/knowledge_relevance.json: recall@5 (the expected passage is in the top 5) and
   MRR (mean of 1/rank of the expected passage).
2. Adds synthetic chunks (words drawn from the corpus) to the same Agent until it has
   --chunks of them, and times the search service over the relevance queries: p50/p95.

It runs against BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/
agent_console_bench), created and migrated if missing; never against the test databases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/agent_console_bench"


def _prepare_environment() -> None:
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("REDIS_URL", "")
    os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="knowledge-bench-")
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
    args = parser.parse_args()
    _prepare_environment()

    import django

    django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection

    from apps.common.errors import ServiceError
    from apps.knowledge import pipeline, services
    from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion, KnowledgeDocument
    from apps.knowledge.search import index_chunks, search_chunks
    from apps.workspaces.models import Agent, Workspace

    call_command("migrate", verbosity=0)
    corpus = Path(os.environ.get("CORPUS_DIR", ROOT.parent / "shared" / "corpus"))
    relevance = json.loads((ROOT / "benchmarks" / "knowledge_relevance.json").read_text())

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

    def evaluate(label: str) -> None:
        ranks = []
        for item in relevance["queries"]:
            hits = search_chunks(agent=agent, query=item["query"], limit=5)
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
        print(f"{label}: recall@5 {recall:.3f}, MRR {mrr:.3f} over {len(ranks)} queries")

    evaluate("Relevance (corpus only)")

    # Synthetic chunks up to --chunks, from corpus words, in one version of one document.
    missing = args.chunks - KnowledgeChunk.objects.filter(agent=agent).count()
    if missing > 0:
        started = time.perf_counter()
        words = [
            word
            for text in KnowledgeChunk.objects.filter(agent=agent).values_list("text", flat=True)
            for word in re.findall(r"\w+", text)
        ]
        rng = random.Random(7)
        filler = KnowledgeDocument.objects.create(
            agent=agent, name="Synthetic filler", source_type="file", status="ready"
        )
        version = KnowledgeContentVersion.objects.create(
            document=filler, markdown="(synthetic)", sha256="0" * 64
        )
        KnowledgeDocument.objects.filter(pk=filler.pk).update(current_version=version)
        batch = 5000
        for start in range(0, missing, batch):
            rows = [
                KnowledgeChunk(
                    version=version,
                    document=filler,
                    agent=agent,
                    heading_path=[f"Section {n}"],
                    text=" ".join(rng.choices(words, k=rng.randint(40, 90))),
                    position=n,
                )
                for n in range(start, min(start + batch, missing))
            ]
            index_chunks(KnowledgeChunk.objects.bulk_create(rows))
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("ANALYZE knowledge_chunk")
        print(f"Added {missing} synthetic chunks in {time.perf_counter() - started:.1f} s.")

    total = KnowledgeChunk.objects.filter(agent=agent).count()
    queries = [item["query"] for item in relevance["queries"]]
    for query in queries:  # warm the caches once
        search_chunks(agent=agent, query=query, limit=10)
    timings = []
    for _ in range(args.runs):
        for query in queries:
            started = time.perf_counter()
            search_chunks(agent=agent, query=query, limit=10)
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p50 = statistics.median(timings)
    p95 = timings[int(len(timings) * 0.95) - 1]
    print(
        f"Latency over {total} chunks ({len(timings)} searches, limit 10): "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {timings[-1]:.1f} ms"
    )
    evaluate(f"Relevance with {total} chunks")


if __name__ == "__main__":
    main()
