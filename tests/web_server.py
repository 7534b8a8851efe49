"""The service as production runs it (README: gunicorn, threads), as a separate process on a
free port against the test database and Redis, for tests of what only a real HTTP server shows:
connection reuse, chunked bodies, database connections that outlive a request.

Tests that use it need `@pytest.mark.django_db(transaction=True)`: the server sees committed
rows only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from tests.redis_server import free_port
from tests.workers import ROOT, worker_environment


class GunicornServer:
    def __init__(self, *, threads: int = 4, **env: str) -> None:
        self.port = free_port()
        self.threads = threads
        self.env = worker_environment(**env)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GunicornServer:
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "config.wsgi",
                "--workers", "1", "--threads", str(self.threads),
                "--bind", f"127.0.0.1:{self.port}", "--log-level", "warning",
            ],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/v1/connection", timeout=2)
                return self
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("gunicorn did not come up")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
