"""How long a tiny upload takes to become `ready`, with nothing queued and behind embedding.

    uv run python benchmarks/interactive_queue.py [--topology split|single] [--rounds 3]
        [--files 8] [--kilobytes 300] [--template DATABASE]

The issue's scenario (issue 27, item 0), against the service as the README's production
section starts it: gunicorn, `celery beat` and the workers, on PostgreSQL and a private
redis-server. Measured from outside, over HTTP, from the upload's 201 to the first
`GET /v1/knowledge/{id}` that answers `ready`:

- idle: a 40-byte `.md` with nothing queued (each round waits for the previous one's embedding);
- busy: 8 distinct ~300 KB markdown files uploaded, awaited until all are `ready` (their
  embedding, about 170 chunks each, is then queued), then a 40-byte `.md`. Each round adds 8 more
  files to the backlog, so later rounds run behind more embedding. `--files` and `--kilobytes`
  change the backlog (tests/benchmarks/ runs it with one small file).

`--topology split` (the default, production's): one worker on the interactive queue, one on the
bulk queue under `nice -n 10`, two processes each. `--topology single`: one worker with two
processes serving both queues, as before the queues were split. The database
(BENCH_DATABASE_URL, default .../agent_console_bench_queues) is dropped and made again,
empty or as a copy of `--template`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.worker_environment import worker_environment  # noqa: E402 - after the path is set
from tests.redis_server import RedisServer, free_port  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/agent_console_bench_queues"
PYTHON = sys.executable
_WORDS = (
    "the a of to and in is for on with that by this be are from as at or an it was which can "
    "kettle warranty boiler filter descaling limescale thermostat switch element gasket lid "
    "customer order refund shipping invoice account password delivery parcel return label "
    "battery charger cable adapter screen button firmware update reset setting network router "
    "signal antenna speaker volume microphone camera lens sensor storage memory card backup "
    "cloud sync device tablet phone laptop keyboard mouse printer paper toner cartridge driver"
)
VOCABULARY = tuple(_WORDS.split())


def markdown_file(seed: int, size: int = 300_000) -> bytes:
    """A distinct markdown manual of about `size` bytes: headings, paragraphs, a few lists."""
    rng = random.Random(seed)
    parts = [f"# Product manual {seed}\n"]
    total = 0
    section = 0
    while total < size:
        section += 1
        parts.append(f"\n## Section {section}: {rng.choice(VOCABULARY)} {rng.choice(VOCABULARY)}\n")
        for _ in range(rng.randint(2, 5)):
            sentence_count = rng.randint(3, 7)
            sentences = [
                " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(8, 20))).capitalize()
                + "."
                for _ in range(sentence_count)
            ]
            parts.append("\n" + " ".join(sentences) + "\n")
        if rng.random() < 0.3:
            parts.append("\n" + "".join(f"- {rng.choice(VOCABULARY)}\n" for _ in range(4)))
        total = sum(len(part) for part in parts)
    return "".join(parts).encode()


def tiny_file(seed: str) -> bytes:
    return f"# Note {seed}\n\nForty bytes or so.\n".encode()[:60]


class Service:
    def __init__(self, *, database_url: str, topology: str, folder: Path) -> None:
        self.redis = RedisServer().start()
        self.port = free_port()
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": self.redis.url(0),
            "VAR_DIR": str(folder),
            "MEDIA_ROOT": str(folder / "media"),
            "DEBUG": "0",
            "SECRET_KEY": "benchmark-" + uuid.uuid4().hex,
            "ALLOWED_HOSTS": "127.0.0.1",
            # The polling below is the client; the rate limit is not what is measured.
            "API_RATE_LIMIT": "1000000/minute",
            "LOG_LEVEL": "WARNING",
        }
        self.topology = topology
        self.folder = folder
        self.processes: list[subprocess.Popen] = []

    def manage(self, *args: str) -> str:
        return subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def _start(self, command: list[str], *, worker: bool = False) -> None:
        env = worker_environment(self.env) if worker else self.env
        self.processes.append(subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True))

    def _worker(self, name: str, queues: str, *, nice: bool) -> None:
        command = [PYTHON, "-m", "celery", "-A", "config", "worker", "--loglevel=WARNING"]
        command += ["--concurrency=2", "-Q", queues, f"--hostname={name}@%h"]
        self._start(["nice", "-n", "10", *command] if nice else command, worker=True)

    def start(self) -> None:
        self._start(
            [PYTHON, "-m", "gunicorn", "config.wsgi", "--workers", "2", "--threads", "4"]
            + ["--bind", f"127.0.0.1:{self.port}", "--log-level", "warning"]
        )
        if self.topology == "split":
            self._worker("interactive", "interactive", nice=False)
            self._worker("bulk", "celery", nice=True)
        else:
            self._worker("single", "celery,interactive", nice=False)
        schedule = str(self.folder / "beat-schedule")
        self._start(
            [PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING", "-s", schedule]
        )

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.redis.stop()


class Api:
    def __init__(self, port: int, key: str) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.key = key

    def request(self, method: str, path: str, body: bytes | None = None, headers=None):
        request = urllib.request.Request(
            self.base + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.key}", **(headers or {})},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def upload(self, name: str, data: bytes) -> str:
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        created = self.request(
            "POST",
            "/v1/knowledge/files",
            body,
            {"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        return created["id"]

    def status(self, document_id: str) -> str:
        return self.request("GET", f"/v1/knowledge/{document_id}")["status"]


def wait_ready(api: Api, document_id: str, *, timeout: float = 900) -> float:
    """Seconds from now until the document answers `ready` (polled every 100 ms)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        status = api.status(document_id)
        if status == "ready":
            return time.monotonic() - started
        if status == "failed":
            raise RuntimeError(f"{document_id} failed")
        time.sleep(0.1)
    raise RuntimeError(f"{document_id} not ready after {timeout} s")


def backlog(database_url: str) -> tuple[int, int]:
    """(documents still embedding, chunks without a vector) in the benchmark database."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        row = connection.execute(
            "SELECT count(*), coalesce(sum(chunk_count - embedded_chunk_count), 0) "
            "FROM knowledge_document WHERE status = 'ready' AND embedded_chunk_count < chunk_count"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def settled(database_url: str) -> bool:
    import psycopg

    with psycopg.connect(database_url) as connection:
        row = connection.execute(
            "SELECT count(*) FROM knowledge_document WHERE status = 'processing' "
            "OR embedded_chunk_count < chunk_count"
        ).fetchone()
    return row is not None and row[0] == 0


def recreate_database(url: str, template: str | None = None) -> None:
    """Drop and make the database again: empty, or a copy of `template` (a migrated database
    nothing is connected to; the migration that follows then has nothing to do)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        copy = f' TEMPLATE "{template}"' if template else ""
        connection.execute(f'CREATE DATABASE "{name}"{copy}')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topology", choices=["split", "single"], default="split")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=8, help="large files per busy round")
    parser.add_argument("--kilobytes", type=int, default=300, help="size of each large file")
    parser.add_argument(
        "--template",
        help="make the database as a copy of this migrated one on the same server (no "
        "documents in it), instead of empty and migrated from the start",
    )
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    recreate_database(database_url, args.template)

    with TemporaryDirectory(prefix="bench-queues-") as folder:
        service = Service(database_url=database_url, topology=args.topology, folder=Path(folder))
        try:
            service.manage("migrate", "--no-input", "-v", "0")
            key = json.loads(service.manage("seed_demo", "--json"))["api_key"]
            service.start()
            api = Api(service.port, key)
            deadline = time.monotonic() + 120
            while True:
                try:
                    api.request("GET", "/v1/connection")
                    break
                except (OSError, ValueError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            print(f"topology={args.topology}, load average {os.getloadavg()[0]:.2f}", flush=True)
            while not settled(database_url):  # the demo's articles
                time.sleep(1)

            idle = []
            for round_number in range(args.rounds):
                document_id = api.upload(f"idle-{round_number}.md", tiny_file(f"i{round_number}"))
                idle.append(wait_ready(api, document_id))
                print(f"idle round {round_number + 1}: ready after {idle[-1]:.2f} s", flush=True)
                while not settled(database_url):
                    time.sleep(0.5)

            busy = []
            for round_number in range(args.rounds):
                started = time.monotonic()
                large = [
                    api.upload(
                        f"manual-{round_number}-{n}.md",
                        markdown_file(round_number * args.files + n, args.kilobytes * 1000),
                    )
                    for n in range(args.files)
                ]
                for document_id in large:
                    wait_ready(api, document_id)
                ingested = time.monotonic() - started
                documents, chunks = backlog(database_url)
                document_id = api.upload(f"busy-{round_number}.md", tiny_file(f"b{round_number}"))
                busy.append(wait_ready(api, document_id))
                print(
                    f"busy round {round_number + 1}: {args.files} files ready after {ingested:.1f} s; "
                    f"tiny upload ready after {busy[-1]:.2f} s behind {chunks} chunks of "
                    f"{documents} documents to embed (load {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
            print(
                f"\nidle: median {statistics.median(idle):.2f} s, max {max(idle):.2f} s\n"
                f"busy: median {statistics.median(busy):.2f} s, max {max(busy):.2f} s"
            )
        finally:
            service.stop()
    return 0


def _exit_on_sigterm(*_args) -> None:
    raise SystemExit(1)  # runs the `finally` that stops every process the benchmark started


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    socket.setdefaulttimeout(60)
    sys.exit(main())
