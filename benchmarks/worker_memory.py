"""Resident memory of a Celery worker child while it ingests and embeds a large document.

    uv run python benchmarks/worker_memory.py [--megabytes 10] [--embed-seconds 240]
        [--file PATH] [--settle-seconds 8]

A real `celery worker --concurrency 1` (the settings and environment `make run` and production
use, `CELERY_WORKER_MAX_MEMORY_PER_CHILD` and glibc's huge pages tunable included) gets one markdown file of `--megabytes`,
generated (headings and paragraphs, the same bytes every run), or the file `--file` names (its
kind found by the pipeline as for any upload: the whole ingestion of a JSON file, for one). The resident set (VmRSS) of
every pool child is read from /proc four times a second through three phases: the fresh child
before the upload, the ingestion (until the document is `ready`), and the embedding (until
every chunk has its vector, or `--embed-seconds`). Printed per phase: p50, p95 and the highest
sample of the largest child, the peak (the highest high-water mark, VmHWM, of any child: a
peak between two samples too), and how many children served it (a child over the per-child
limit after a task is replaced). Goal (issue 11): under 400 MB throughout.

Everything is private to the run: its own redis-server on a free port, its own database
(MEMORY_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/agent_console_memory, emptied
of documents first) and a temporary media folder. Environment variables the worker reads
(KNOWLEDGE_EMBED_BATCH_SIZE, CELERY_WORKER_MAX_MEMORY_PER_CHILD, MALLOC_ARENA_MAX, ...) pass
through, so a setting can be compared by running twice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from random import Random
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set
from benchmarks.fault_drills import Service  # noqa: E402
from config.worker_environment import worker_environment  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/agent_console_memory"
SAMPLE_EVERY_S = 0.25


def markdown_of(megabytes: float, seed: int = 7) -> bytes:
    """About `megabytes` of markdown: sections of a few paragraphs of ordinary words."""
    random = Random(seed)
    words = [
        "account", "refund", "order", "shipping", "invoice", "customer", "policy", "return",
        "payment", "warranty", "delivery", "support", "ticket", "product", "service", "days",
        "within", "after", "before", "every", "request", "change", "address", "store", "price",
    ] + ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(3, 9)))
         for _ in range(3000)]  # fmt: skip
    target = int(megabytes * 1_000_000)
    parts: list[str] = []
    size = 0
    section = 0
    while size < target:
        section += 1
        block = [f"## Section {section}: {random.choice(words)} {random.choice(words)}\n"]
        for _ in range(random.randint(2, 5)):
            sentence_count = random.randint(3, 7)
            sentences = [
                " ".join(random.choice(words) for _ in range(random.randint(6, 18))).capitalize()
                + "."
                for _ in range(sentence_count)
            ]
            block.append(" ".join(sentences) + "\n")
        text = "\n".join(block) + "\n"
        parts.append(text)
        size += len(text.encode())
    return ("# Handbook\n\n" + "".join(parts)).encode()


def pool_children(worker_pid: int) -> list[int]:
    try:
        with open(f"/proc/{worker_pid}/task/{worker_pid}/children") as children:
            return [int(pid) for pid in children.read().split()]
    except OSError:
        return []


def resident_mb(pid: int) -> tuple[float, float] | None:
    """(VmRSS, VmHWM) of a process in MB: its resident set now and the highest it has been,
    which catches a peak between two samples."""
    sizes = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    sizes[line[:5]] = int(line.split()[1]) / 1024
    except OSError:
        return None
    if len(sizes) < 2:
        return None
    return sizes["VmRSS"], sizes["VmHWM"]


class Sampler(threading.Thread):
    """The largest pool child's RSS, four times a second, under the current phase's name, and
    the highest any child reached (its high-water mark)."""

    def __init__(self, worker_pid: int) -> None:
        super().__init__(daemon=True)
        self.worker_pid = worker_pid
        self.phase = "fresh child"
        self.samples: dict[str, list[float]] = {}
        self.peaks: dict[str, float] = {}
        self.children: dict[str, set[int]] = {}
        # Per phase and child: its CPU time (ns, /proc/<pid>/schedstat) at the first and the
        # last sample: what the phase cost in CPU, whatever else ran on the machine.
        self.cpu: dict[str, dict[int, list[int]]] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_EVERY_S):
            phase = self.phase
            sizes = {pid: resident_mb(pid) for pid in pool_children(self.worker_pid)}
            read = {pid: size for pid, size in sizes.items() if size is not None}
            if read:
                self.samples.setdefault(phase, []).append(max(rss for rss, _ in read.values()))
                peak = max(hwm for _, hwm in read.values())
                self.peaks[phase] = max(self.peaks.get(phase, 0.0), peak)
                self.children.setdefault(phase, set()).update(read)
                for pid in read:
                    used = cpu_ns(pid)
                    if used is not None:
                        self.cpu.setdefault(phase, {}).setdefault(pid, [used, used])[1] = used

    def cpu_seconds(self, phase: str) -> float:
        return sum(last - first for first, last in self.cpu.get(phase, {}).values()) / 1e9


def cpu_ns(pid: int) -> int | None:
    """Nanoseconds the process has spent on a CPU (its main thread's; onnxruntime runs one
    thread in a worker, KNOWLEDGE_EMBED_THREADS)."""
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=10)
    parser.add_argument("--embed-seconds", type=float, default=240)
    parser.add_argument("--file", type=Path, help="upload this file instead of the markdown")
    parser.add_argument(
        "--settle-seconds", type=float, default=8, help="the idle child's phase, before the upload"
    )
    args = parser.parse_args()

    database = os.environ.get("MEMORY_DATABASE_URL", DEFAULT_DATABASE)
    ensure_database(database)
    redis = RedisServer().start()
    with TemporaryDirectory() as folder:
        os.environ.update(
            DATABASE_URL=database,
            REDIS_URL=redis.url(0),
            MEDIA_ROOT=str(Path(folder) / "media"),
            DJANGO_SETTINGS_MODULE="config.settings",
        )
        import django

        django.setup()
        from django.core.files.uploadedfile import SimpleUploadedFile
        from django.core.management import call_command

        from apps.knowledge import services
        from apps.knowledge.models import KnowledgeDocument
        from apps.workspaces.demo import demo_seed

        call_command("migrate", verbosity=0)
        agent = demo_seed(email="memory@bench.example", password="memory-bench-password")["agent"]
        KnowledgeDocument.objects.filter(agent=agent).delete()

        # The worker alone, with the environment make run gives it.
        service = Service(worker_environment(os.environ), Path(folder), web_port=0)
        service.start(
            "worker", "celery", "-A", "config", "worker", "--concurrency", "1",
            "-l", "WARNING", "--without-gossip", "--without-mingle",
        )  # fmt: skip
        sampler = Sampler(service.processes["worker"].pid)
        sampler.start()
        try:
            # The worker up and its child idle: the fresh child's size, sampled at least once
            # (a worker slower to start than --settle-seconds, on a loaded machine or in the
            # smoke run's second, is waited for).
            time.sleep(args.settle_seconds)
            deadline = time.monotonic() + 120
            while "fresh child" not in sampler.samples and time.monotonic() < deadline:
                time.sleep(0.05)
            if args.file:
                name, data = args.file.name, args.file.read_bytes()
            else:
                name, data = "handbook.md", markdown_of(args.megabytes)
            sampler.phase = "ingestion"
            started = time.monotonic()
            document = services.document_create_from_upload(
                agent=agent,
                upload=SimpleUploadedFile(name, data, content_type="application/octet-stream"),
            )
            while True:
                document.refresh_from_db()
                if document.status != KnowledgeDocument.Status.PROCESSING:
                    break
                time.sleep(0.5)
            ingested_s = time.monotonic() - started
            if document.status != KnowledgeDocument.Status.READY:
                raise SystemExit(f"ingestion ended {document.status}: {document.error_message}")
            sampler.phase = "embedding"
            started = time.monotonic()
            while time.monotonic() - started < args.embed_seconds:
                document.refresh_from_db()
                if document.embedded_chunk_count >= document.chunk_count:
                    break
                time.sleep(1)
            embedding_s = time.monotonic() - started
        finally:
            sampler.stopped.set()
            service.stop_all()
            redis.stop()
    phases = {
        phase: {
            "samples": len(values),
            "p50_mb": round(statistics.median(values), 1),
            "p95_mb": round(percentile(values, 0.95), 1),
            "highest_sample_mb": round(max(values), 1),
            "peak_mb": round(sampler.peaks[phase], 1),
            "children": len(sampler.children[phase]),
        }
        for phase, values in sampler.samples.items()
    }
    print(
        json.dumps(
            {
                "file_mb": round(len(data) / 1e6, 2),
                "chunks": document.chunk_count,
                "ingestion_s": round(ingested_s, 1),
                "embedded_chunks": document.embedded_chunk_count,
                "embedding_s": round(embedding_s, 1),
                # Throughput: chunks embedded per second of the embedding phase (every window
                # of each chunk; an 1,800-character passage is 3-5 of them, docs/knowledge.md).
                "embedding_chunks_per_s": round(document.embedded_chunk_count / embedding_s, 2)
                if embedding_s
                else None,
                # The same per second of the child's CPU: what a core does with nothing beside.
                "embedding_cpu_s": round(sampler.cpu_seconds("embedding"), 1),
                "embedding_chunks_per_cpu_s": round(
                    document.embedded_chunk_count / sampler.cpu_seconds("embedding"), 2
                )
                if sampler.cpu_seconds("embedding")
                else None,
                "phases": phases,
                "settings": {
                    name: os.environ.get(name)
                    for name in (
                        "KNOWLEDGE_EMBED_BATCH_SIZE",
                        "CELERY_WORKER_MAX_MEMORY_PER_CHILD",
                        "MALLOC_ARENA_MAX",
                    )
                    if os.environ.get(name)
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
