"""A private `redis-server` for outage tests: the machine's Redis is shared and is never paused,
stopped or filled by a test.

`RedisServer().start()` runs one on a free port with no persistence; `stop()` ends it (its data
is gone, as after a crash without persistence) and `start()` brings it back on the same port.
"""

from __future__ import annotations

import socket
import subprocess
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Probed without redis-py's retries: its default client retries a refused connection
        # three times with a backoff of about a second, which this loop would wait out.
        probe = redis.Redis(host="127.0.0.1", port=self.port, retry=Retry(NoBackoff(), 0))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if probe.ping():
                    probe.close()
                    return self
            except redis.ConnectionError:
                time.sleep(0.01)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
