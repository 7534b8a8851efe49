"""Embedding under a CPU burner (issue 34 §4): corpus documents embedded by the bulk worker while
busy loops hold every core; no task may fail and progress may not stall.

    uv run python benchmarks/embedding_under_load.py [--documents 20] [--burners 2]
        [--timeout 1800] [--template DATABASE]

The bulk worker as the README's production section starts it (`nice -n 10`, two processes,
the production settings and soft time limit), on PostgreSQL and a private redis-server;
`--burners` processes spin at normal priority from before the first upload to the end. The
first `--documents` corpus files (../shared/corpus or CORPUS_DIR; CSV, Word, HTML, JSON,
Markdown and text, no PDFs: the extraction of scanned ones is not what is measured) are
ingested here, which queues their embedding as production does. Every half second the
embedded passages are counted; the script reports:

- how long until every passage was embedded, and the load average meanwhile;
- the longest gap without progress (no passage embedded anywhere), from the first embedded
  passage to the last;
- `knowledge.embed` runs from the worker's log: how many, their outcomes, the longest, and any
  that failed or met the soft time limit;
- the most failed batches any document recorded (`embedding_failures`).

The database (BENCH_DATABASE_URL, default .../agent_console_bench_embedding) is dropped and
made again, empty or as a copy of `--template` (a migrated database nothing is connected to:
the migration then has nothing to do).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.interactive_queue import recreate_database  # noqa: E402 - after the path is set
from config.worker_environment import worker_environment  # noqa: E402
from tests.corpus import CORPUS_DIR  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/agent_console_bench_embedding"
PYTHON = sys.executable
KINDS = ("csv", "docx", "html", "json", "md", "txt")
_RUN = re.compile(r"Task knowledge\.embed\[[^\]]+\] succeeded in ([0-9.]+)s: '(\w+)'")


def burn() -> None:
    while True:
        pass


def corpus_files(count: int) -> list[Path]:
    files = sorted(
        path for kind in KINDS for path in (CORPUS_DIR / kind).glob("*") if path.is_file()
    )
    if len(files) < count:
        raise SystemExit(f"only {len(files)} corpus files under {CORPUS_DIR}")
    return files[:count]


class Progress(threading.Thread):
    """Embedded passages, every half second: the longest gap without progress."""

    def __init__(self, database_url: str) -> None:
        super().__init__(daemon=True)
        self.database_url = database_url
        self.stop_event = threading.Event()
        self.finished = threading.Event()  # set once every passage is embedded
        self.last = -1
        self.total = 0
        self.first_progress_at: float | None = None
        self.last_progress_at: float | None = None
        self.longest_gap = 0.0
        self.most_failures = 0
        self.states: Counter = Counter()

    def read(self, connection) -> tuple[int, int, int]:
        row = connection.execute(
            "SELECT coalesce(sum(embedded_chunk_count), 0), coalesce(sum(chunk_count), 0), "
            "coalesce(max(embedding_failures), 0) FROM knowledge_document WHERE status = 'ready'"
        ).fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as connection:
            while not self.stop_event.is_set():
                embedded, total, failures = self.read(connection)
                now = time.monotonic()
                self.total = total
                self.most_failures = max(self.most_failures, failures)
                if embedded > self.last:
                    if self.last_progress_at is not None and self.last >= 0:
                        self.longest_gap = max(self.longest_gap, now - self.last_progress_at)
                    if embedded > 0:
                        if self.first_progress_at is None:
                            self.first_progress_at = now
                        self.last_progress_at = now
                    self.last = embedded
                if self.done:
                    self.finished.set()
                self.stop_event.wait(0.5)

    @property
    def done(self) -> bool:
        return self.total > 0 and self.last >= self.total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument(
        "--template",
        help="make the database as a copy of this migrated one on the same server, instead of "
        "empty and migrated from the start",
    )
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    recreate_database(database_url, args.template)
    files = corpus_files(args.documents)
    redis = RedisServer().start()
    burners: list[multiprocessing.Process] = []
    worker = None
    with TemporaryDirectory(prefix="bench-embedding-") as folder:
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis.url(0),
            "VAR_DIR": folder,
            "MEDIA_ROOT": str(Path(folder) / "media"),
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
        }
        for key in ("CELERY_TASK_DEFAULT_QUEUE", "CELERY_INTERACTIVE_QUEUE"):
            env.pop(key, None)
        log_path = Path(folder) / "worker.log"
        try:
            os.environ.update(env)
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
            import django

            django.setup()
            from django.core.files.uploadedfile import SimpleUploadedFile
            from django.core.management import call_command

            call_command("migrate", interactive=False, verbosity=0)

            from apps.knowledge import pipeline, services
            from tests.factories import agent_factory, workspace_factory

            agent = agent_factory(workspace=workspace_factory())
            with log_path.open("w") as log:
                worker = subprocess.Popen(
                    ["nice", "-n", "10", PYTHON, "-m", "celery", "-A", "config", "worker"]
                    + ["--loglevel=INFO", "--concurrency=2", "-Q", "celery", "-n", "bulk@%h"],
                    cwd=ROOT,
                    env=worker_environment(env),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            burners = [
                multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)
            ]
            for burner in burners:
                burner.start()
            time.sleep(2)
            load_start = os.getloadavg()[0]
            progress = Progress(database_url)
            progress.start()
            started = time.monotonic()
            for path in files:
                document = services.document_create_from_upload(
                    agent=agent, upload=SimpleUploadedFile(path.name, path.read_bytes())
                )
                outcome = pipeline.document_ingest(document_id=document.pk)
                print(f"{path.parent.name}/{path.name}: {outcome}", flush=True)
            ingested = time.monotonic() - started
            loads = []
            while not progress.done:
                if time.monotonic() - started > args.timeout:
                    print("timed out", flush=True)
                    break
                loads.append(os.getloadavg()[0])
                progress.finished.wait(2)  # ends as soon as the last passage is embedded
            elapsed = time.monotonic() - started
            progress.stop_event.set()
            progress.join()
            log_text = log_path.read_text(errors="replace")
            runs = [(float(seconds), outcome) for seconds, outcome in _RUN.findall(log_text)]
            outcomes = Counter(outcome for _, outcome in runs)
            failed = log_text.count("raised unexpected")
            soft = log_text.count("Soft time limit")
            span = (
                (progress.last_progress_at or 0) - (progress.first_progress_at or 0)
                if progress.first_progress_at
                else 0
            )
            print(
                f"\n{len(files)} documents, {progress.total} passages; {args.burners} burners; "
                f"load average {load_start:.2f} at the start, median "
                f"{sorted(loads)[len(loads) // 2] if loads else 0:.2f}, max "
                f"{max(loads, default=0):.2f}\n"
                f"ingested in {ingested:.1f} s; every passage embedded after {elapsed:.1f} s "
                f"({'done' if progress.done else 'NOT done'}), embedding spanned {span:.1f} s\n"
                f"longest gap without progress: {progress.longest_gap:.1f} s\n"
                f"knowledge.embed runs: {len(runs)} ({dict(outcomes)}), longest "
                f"{max((s for s, _ in runs), default=0):.1f} s; failed {failed}, soft time "
                f"limit met {soft}; most failed batches of a document {progress.most_failures}"
            )
        finally:
            for burner in burners:
                burner.terminate()
            if worker is not None and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
            redis.stop()
    return 0


def _exit_on_sigterm(*_args) -> None:
    raise SystemExit(1)  # runs the `finally` that stops every process the benchmark started


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.exit(main())
