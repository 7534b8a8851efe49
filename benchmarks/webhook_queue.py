"""The webhook queue drill (issue 34 §3): with thousands of deliveries queued to an unreachable
endpoint and documents' embedding queued, how long a tiny upload takes to be `ready`, and how
long the broker's queues grow.

    uv run python benchmarks/webhook_queue.py [--runs 3000] [--files 8] [--kilobytes 100]
        [--uploads 3] [--upload-every 10] [--seconds 90] [--template DATABASE]

Against the service as the README's production section starts it (gunicorn 2 x 4, one worker
per queue, two processes each, the bulk one under `nice -n 10`, and beat), on PostgreSQL and
a private redis-server:

1. the demo Agent's webhook points at a black hole on 127.0.0.1 (a socket that listens and
   never accepts: each attempt waits out the read timeout, 10 s, as a dead endpoint does);
2. `--runs` completed runs are posted to /v1/ingest (100 a request): each records a delivery;
3. `--files` distinct markdown files of `--kilobytes` are uploaded and awaited `ready`: their
   embedding is then queued on the bulk queue;
4. `--uploads` tiny uploads, one every `--upload-every` seconds (10) after the previous one is
   `ready` (the last one too), each timed from its 201 to the first `GET /v1/knowledge/{id}`
   that answers `ready`;
5. for `--seconds` from step 2 on, the length of every queue is sampled each second, and the
   webhook queue's dispatcher messages are counted.

The database (BENCH_DATABASE_URL, default .../agent_console_bench_webhooks) is dropped and
made again, empty or as a copy of `--template` (a migrated database nothing is connected to:
the migration then has nothing to do). The web and worker processes may reach 127.0.0.1 (the
test-only network setting).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from interactive_queue import (  # noqa: E402 - after the path is set
    PYTHON,
    Api,
    Service,
    markdown_file,
    recreate_database,
    settled,
    tiny_file,
    wait_ready,
)

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/agent_console_bench_webhooks"
QUEUES = ("interactive", "webhooks", "celery")


class BlackHole:
    """A TCP port that takes connections into its backlog and never answers them."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(4096)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}/hook"

    def close(self) -> None:
        self.socket.close()


class ProductionService(Service):
    """interactive_queue.Service with the README's three workers."""

    def start(self) -> None:
        self._start(
            [PYTHON, "-m", "gunicorn", "config.wsgi", "--workers", "2", "--threads", "4"]
            + ["--bind", f"127.0.0.1:{self.port}", "--log-level", "warning"]
        )
        self._worker("interactive", "interactive", nice=False)
        self._worker("webhooks", "webhooks", nice=False)
        self._worker("bulk", "celery", nice=True)
        schedule = str(self.folder / "beat-schedule")
        self._start(
            [PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING", "-s", schedule]
        )


class QueueSampler(threading.Thread):
    """Every second: each queue's length, and the dispatcher messages on the webhook queue."""

    def __init__(self, redis_client) -> None:
        super().__init__(daemon=True)
        self.client = redis_client
        self.peaks: Counter = Counter()
        self.dispatch_peak = 0
        self.samples = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            for queue in QUEUES:
                self.peaks[queue] = max(self.peaks[queue], int(self.client.llen(queue)))
            dispatchers = sum(
                1
                for raw in self.client.lrange("webhooks", 0, -1)
                if json.loads(raw)["headers"]["task"] == "webhooks.dispatch_due"
            )
            self.dispatch_peak = max(self.dispatch_peak, dispatchers)
            self.samples += 1
            self.stop_event.wait(1.0)


def completed_runs(conversation: str, start: int, count: int) -> bytes:
    records: list[dict] = []
    if start == 0:
        records.append({"type": "conversation", "id": conversation, "status": "completed"})
    for number in range(start, start + count):
        records.append(
            {
                "type": "run",
                "id": f"run_drill_{conversation[-8:]}_{number}",
                "conversation_id": conversation,
                "request_id": f"req_{number}",
                "status": "completed",
                "sdk_version": "5.0.0",
                "protocol_version": 1,
                "created_at": "2026-01-01T00:00:00Z",
                "completed_at": "2026-01-01T00:00:01Z",
            }
        )
    return json.dumps(records).encode()


def delivery_states(database_url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT status, count(*) FROM webhooks_webhookdelivery GROUP BY status"
        ).fetchall()
        attempts = connection.execute("SELECT count(*) FROM webhooks_webhookattempt").fetchone()
    states = {str(status): int(count) for status, count in rows}
    states["attempts"] = int(attempts[0]) if attempts else 0
    return states


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3000, help="completed runs (deliveries)")
    parser.add_argument("--files", type=int, default=8, help="documents whose embedding queues")
    parser.add_argument("--kilobytes", type=int, default=100, help="size of each document")
    parser.add_argument("--uploads", type=int, default=3, help="tiny uploads timed")
    parser.add_argument(
        "--upload-every", type=float, default=10, help="seconds after each tiny upload is ready"
    )
    parser.add_argument("--seconds", type=float, default=90, help="how long queues are sampled")
    parser.add_argument(
        "--template",
        help="make the database as a copy of this migrated one on the same server (no "
        "documents in it), instead of empty and migrated from the start",
    )
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    recreate_database(database_url, args.template)
    hole = BlackHole()

    with TemporaryDirectory(prefix="bench-webhooks-") as folder:
        service = ProductionService(
            database_url=database_url, topology="split", folder=Path(folder)
        )
        service.env["NETGUARD_ALLOW_LOOPBACK_FOR_TESTS"] = "1"
        sampler = None
        try:
            service.manage("migrate", "--no-input", "-v", "0")
            key = json.loads(service.manage("seed_demo", "--json"))["api_key"]
            service.start()
            api = Api(service.port, key)
            deadline = time.monotonic() + 120
            while True:
                try:
                    agent_id = api.request("GET", "/v1/connection")["agent"]["id"]
                    break
                except (OSError, ValueError, KeyError, TypeError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            while not settled(database_url):  # the demo's articles
                time.sleep(1)
            load_before = os.getloadavg()
            api.request(
                "PATCH",
                f"/v1/agents/{agent_id}/webhook",
                json.dumps(
                    {
                        "url": hole.url,
                        "events": ["run.completed", "run.failed", "run.aborted"],
                        "enabled": True,
                        "paused": False,
                    }
                ).encode(),
                {"Content-Type": "application/json"},
            )
            sampler = QueueSampler(service.redis.client())
            sampler.start()
            started = time.monotonic()
            conversation = "conv_drill_" + uuid.uuid4().hex[:8]
            for start in range(0, args.runs, 100):
                api.request(
                    "POST",
                    "/v1/ingest",
                    completed_runs(conversation, start, min(100, args.runs - start)),
                    {"Content-Type": "application/json"},
                )
            recorded = time.monotonic() - started
            print(
                f"{args.runs} completed runs recorded in {recorded:.1f} s; webhook queue "
                f"{service.redis.client().llen('webhooks')} messages",
                flush=True,
            )
            large = [
                api.upload(f"manual-{n}.md", markdown_file(n, args.kilobytes * 1000))
                for n in range(args.files)
            ]
            for document_id in large:
                wait_ready(api, document_id)
            print(
                f"{args.files} files of {args.kilobytes} KB ready; bulk queue "
                f"{service.redis.client().llen('celery')} messages",
                flush=True,
            )
            ready = []
            for number in range(args.uploads):
                document_id = api.upload(f"tiny-{number}.md", tiny_file(f"t{number}"))
                ready.append(wait_ready(api, document_id, timeout=300))
                print(
                    f"tiny upload {number + 1}: ready after {ready[-1]:.2f} s "
                    f"(load {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
                time.sleep(args.upload_every)
            while time.monotonic() - started < args.seconds:
                time.sleep(1)
            sampler.stop_event.set()
            sampler.join()
            states = delivery_states(database_url)
            print(
                f"\nload average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}\n"
                f"tiny uploads ready: median {statistics.median(ready):.2f} s, "
                f"max {max(ready):.2f} s\n"
                f"queue peaks over {sampler.samples} samples in {args.seconds:.0f} s: "
                + ", ".join(f"{queue} {sampler.peaks[queue]}" for queue in QUEUES)
                + f"; dispatcher messages on the webhook queue at most {sampler.dispatch_peak}\n"
                f"deliveries: {states}"
            )
        finally:
            if sampler is not None:
                sampler.stop_event.set()
            service.stop()
            hole.close()
    return 0


def _exit_on_sigterm(*_args) -> None:
    raise SystemExit(1)  # runs the `finally` that stops every process the benchmark started


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    socket.setdefaulttimeout(60)
    sys.exit(main())
