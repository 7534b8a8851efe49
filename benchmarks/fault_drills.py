"""Fault drills against the service as the README's production section starts it: gunicorn,
`celery worker` and `celery beat`, on PostgreSQL and Redis, with the production intervals.

    uv run python benchmarks/fault_drills.py [--outage 30] [--database-outage 10]
        [--settle-seconds 5] [--drill worker|redis|database ...]

1. Worker SIGKILL: a URL document whose fetch is in flight; the worker's process group is
   SIGKILLed and a replacement started at once (as a supervisor would). Measured: seconds from
   the kill until the document is `ready`.
2. Redis outage: Redis stopped for `--outage` seconds; a file uploaded meanwhile. Measured:
   seconds from Redis being back until the document is `ready`.
3. PostgreSQL outage: a TCP proxy in front of PostgreSQL is cut for `--database-outage` seconds
   while the API (`GET /v1/connection`) and a console page (`GET /api-keys/`, signed in) are
   polled. Counted: their status codes; measured: seconds until both answer 200 again.

Everything is private to the drill: its own redis-server on a free port, its own database
(DRILL_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/agent_console_drill) reached
through the proxy, a local page server for the URL document. The machine's services are never
stopped. The worker may fetch from 127.0.0.1 only through the test-only loopback setting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from http.cookiejar import CookieJar
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/agent_console_drill"

from tests.redis_server import RedisServer, free_port  # noqa: E402
from tests.tcp_proxy import CuttableProxy  # noqa: E402


class HeldPage:
    """A page whose first request hangs until `release()`."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.arrived = threading.Event()
        page = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                page.arrived.set()
                page.released.wait(120)
                body = b"<html><head><title>Drill</title></head><body><h1>Drill</h1>"
                body += b"<p>Fetched after a worker crash.</p></body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/page"


class Service:
    def __init__(self, env: dict[str, str], folder: Path, web_port: int) -> None:
        self.env = env
        self.folder = folder
        self.web_port = web_port
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *command: str) -> None:
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - kept open with the process
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", *command],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_worker(self) -> None:
        self.start("worker", "celery", "-A", "config", "worker", "--concurrency", "2", "-l", "INFO")

    def start_all(self) -> None:
        self.start(
            "web", "gunicorn", "config.wsgi", "--workers", "2", "--threads", "4",
            "--bind", f"127.0.0.1:{self.web_port}",
        )  # fmt: skip
        self.start_worker()
        self.start(
            "beat", "celery", "-A", "config", "beat", "-l", "INFO",
            f"--schedule={self.folder / 'beat-schedule'}", f"--pidfile={self.folder / 'beat.pid'}",
        )  # fmt: skip

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait()

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


class Client:
    def __init__(self, base: str, key: str) -> None:
        self.base = base
        self.key = key
        self.browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def api(self, method: str, path: str, body: bytes | None = None, content_type: str = ""):
        request = urllib.request.Request(self.base + path, data=body, method=method)
        request.add_header("Authorization", f"Bearer {self.key}")
        if content_type:
            request.add_header("Content-Type", content_type)
        return self._open(urllib.request.urlopen, request)

    def page(self, path: str, data: dict | None = None):
        body = urllib.parse.urlencode(data).encode() if data else None
        request = urllib.request.Request(self.base + path, data=body)
        if data:
            request.add_header("Referer", self.base + path)
        return self._open(self.browser.open, request)

    @staticmethod
    def _open(opener, request) -> tuple[int, bytes]:
        try:
            with opener(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (urllib.error.URLError, OSError):
            return 0, b""

    def login(self, email: str, password: str) -> None:
        _, html = self.page("/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert token, "no CSRF token on the login page"
        fields = {"username": email, "password": password, "csrfmiddlewaretoken": token[1]}
        self.page("/login/", fields)

    def document_status(self, document_id: str) -> str | None:
        status, body = self.api("GET", f"/v1/knowledge/{document_id}")
        return json.loads(body)["status"] if status == 200 else None


def wait(predicate, timeout: float, step: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(step)
    raise SystemExit(f"drill failed: condition not met within {timeout} s")


def multipart(name: str, data: bytes) -> tuple[bytes, str]:
    boundary = "drill-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def drill_worker_kill(service: Service, client: Client, page: HeldPage) -> float:
    status, body = client.api(
        "POST", "/v1/knowledge/urls", json.dumps({"url": page.url()}).encode(), "application/json"
    )
    assert status == 201, body
    document_id = json.loads(body)["id"]
    assert page.arrived.wait(120), "the worker never fetched the page"
    service.kill("worker")
    killed_at = time.monotonic()
    page.released.set()
    service.start_worker()
    wait(lambda: client.document_status(document_id) == "ready", timeout=300)
    return time.monotonic() - killed_at


def drill_redis_outage(redis: RedisServer, client: Client, outage: float) -> float:
    redis.stop()
    stopped_at = time.monotonic()
    body, content_type = multipart("outage.md", b"# Outage\n\nUploaded while Redis was down.\n")
    status, answer = client.api("POST", "/v1/knowledge/files", body, content_type)
    assert status == 201, (status, answer)
    document_id = json.loads(answer)["id"]
    time.sleep(max(0.0, outage - (time.monotonic() - stopped_at)))
    redis.start()
    back_at = time.monotonic()
    wait(lambda: client.document_status(document_id) == "ready", timeout=600)
    return time.monotonic() - back_at


def drill_database_outage(proxy: CuttableProxy, client: Client, outage: float) -> dict:
    api, console = Counter(), Counter()
    proxy.cut()
    cut_at = time.monotonic()
    while time.monotonic() - cut_at < outage:
        api[client.api("GET", "/v1/connection")[0]] += 1
        console[client.page("/api-keys/")[0]] += 1
        time.sleep(0.2)
    proxy.restore()
    back_at = time.monotonic()
    wait(
        lambda: (
            client.api("GET", "/v1/connection")[0] == 200 and client.page("/api-keys/")[0] == 200
        ),
        timeout=60,
        step=0.1,
    )
    return {
        "api_statuses": dict(api),
        "console_statuses": dict(console),
        "recovered_after_s": round(time.monotonic() - back_at, 2),
    }


DRILLS = ["worker", "redis", "database"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outage", type=float, default=30.0, help="Redis outage, seconds")
    parser.add_argument("--database-outage", type=float, default=10.0)
    parser.add_argument(
        "--settle-seconds", type=float, default=5.0, help="for worker and beat to start"
    )
    parser.add_argument(
        "--drill",
        action="append",
        choices=DRILLS,
        help="run only this drill (repeatable; default: all three, in this order)",
    )
    args = parser.parse_args()
    drills = args.drill or DRILLS

    database = os.environ.get("DRILL_DATABASE_URL", DEFAULT_DATABASE)
    ensure_database(database)
    pg_port = int(re.search(r":(\d+)/", database)[1])
    proxy = CuttableProxy(pg_port)
    proxied = re.sub(r":\d+/", f":{proxy.port}/", database)
    redis = RedisServer().start()
    page = HeldPage()
    web_port = free_port()
    with TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "DATABASE_URL": proxied,
            "REDIS_URL": redis.url(0),
            "MEDIA_ROOT": str(Path(folder) / "media"),
            "NETGUARD_ALLOW_LOOPBACK_FOR_TESTS": "1",
            "API_RATE_LIMIT": "100000/minute",
            "ALLOWED_HOSTS": "127.0.0.1",
        }
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        seeded = subprocess.run(
            [*manage, "seed_demo", "--json"], cwd=ROOT, env=env, check=True, capture_output=True
        )
        demo = json.loads(seeded.stdout.decode().strip().splitlines()[-1])
        service = Service(env, Path(folder), web_port)
        service.start_all()
        client = Client(f"http://127.0.0.1:{web_port}", demo["api_key"])
        try:
            wait(lambda: client.api("GET", "/v1/connection")[0] == 200, timeout=120)
            client.login(demo["owner_email"], demo["owner_password"])
            assert client.page("/api-keys/")[0] == 200, "could not sign in to the console"
            time.sleep(args.settle_seconds)  # worker and beat up
            results: dict = {}
            if "worker" in drills:
                settled = drill_worker_kill(service, client, page)
                results["worker_sigkill_settled_after_s"] = round(settled, 1)
            if "redis" in drills:
                settled = drill_redis_outage(redis, client, args.outage)
                results["redis_outage_s"] = args.outage
                results["redis_outage_settled_after_s"] = round(settled, 1)
            if "database" in drills:
                results["database_outage_s"] = args.database_outage
                results.update(drill_database_outage(proxy, client, args.database_outage))
        finally:
            service.stop_all()
            redis.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
