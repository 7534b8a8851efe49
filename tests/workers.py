"""A real Celery worker for tests whose behaviour is asynchronous.

`celery_worker_process` starts `celery worker` as a separate process against the test
database and the Redis broker, so a test can also kill it (SIGKILL) mid-task and start another.
Tests that use it need `@pytest.mark.django_db(transaction=True)`: the worker only sees
committed rows.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from config.worker_environment import worker_environment as production_worker_environment

ROOT = Path(__file__).resolve().parent.parent

# The test being set up or run (tests/conftest.py keeps it): a Celery worker or beat starts only
# in a test marked `worker`, the marker `make test-fast` selects on, so the marker cannot be
# forgotten on a test that needs a worker.
running_test: pytest.Item | None = None


def require_worker_marker(what: str) -> None:
    if running_test is not None and running_test.get_closest_marker("worker") is None:
        raise RuntimeError(
            f"{running_test.nodeid} starts {what}: mark it @pytest.mark.worker "
            "(make test-fast leaves such tests out)"
        )


def process_queues() -> tuple[str, str]:
    """This test process's bulk and interactive queues (tests/conftest.py names them)."""
    from config.celery import app

    return app.conf.task_default_queue, app.conf.interactive_queue


def webhook_queue() -> str:
    """This test process's webhook queue (tests/conftest.py names it)."""
    from config.celery import app

    return app.conf.webhook_queue


def all_queues() -> tuple[str, ...]:
    return (*process_queues(), webhook_queue())


def purge_test_queues() -> None:
    """Drop what earlier tests (or runs) left on this test process's two queues."""
    from config.celery import app

    with app.connection_for_write() as conn:
        channel = conn.default_channel
        for queue in all_queues():
            channel.queue_purge(queue)
    # The mark "a dispatcher message is waiting" went with the purged message.
    from apps.common import singleflight
    from apps.webhooks.tasks import dispatch_queued_mark

    singleflight.unmark(dispatch_queued_mark())


@contextmanager
def broker_at(url: str) -> Iterator[None]:
    """This process's Celery app publishes to `url` inside the block (a private redis-server, or a
    port nothing listens on), and to the usual broker again after it."""
    from config.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = url
    # Connections are pooled per broker URL, on the app and on app.amqp: drop both pools.
    app._pool = app.amqp._producer_pool = None
    try:
        yield
    finally:
        app.conf.broker_url = previous
        app._pool = app.amqp._producer_pool = None


def broker_unreachable() -> AbstractContextManager[None]:
    """The broker is down for this process inside the block: nothing listens on port 1."""
    return broker_at("redis://127.0.0.1:1/0")


def worker_environment(**extra: str) -> dict[str, str]:
    """The environment production gives a worker (config.worker_environment), pointed at the
    test database, Redis and this test process's queues (so what a worker or beat sends, such
    as knowledge.embed after an ingestion, stays on them)."""
    db = connection.settings_dict
    env = production_worker_environment(os.environ)
    if settings.IS_POSTGRES:
        env["DATABASE_URL"] = (
            f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        )
    else:
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    env["REDIS_URL"] = settings.REDIS_URL
    env["CELERY_TASK_DEFAULT_QUEUE"], env["CELERY_INTERACTIVE_QUEUE"] = process_queues()
    env["CELERY_WEBHOOK_QUEUE"] = webhook_queue()
    env.update(extra)
    return env


class WorkerProcess:
    def __init__(
        self, *, queues: str | None = None, concurrency: int = 1, name: str = "celery", **env: str
    ) -> None:
        # Every queue of this test process unless told otherwise (production runs one worker
        # per queue; a test that needs that passes `queues`).
        self.queues = queues or ",".join(all_queues())
        self.concurrency = concurrency
        self.hostname = f"{name}@{socket.gethostname()}"
        self.env = worker_environment(**env)
        self.process: subprocess.Popen | None = None

    def start(self) -> WorkerProcess:
        require_worker_marker("a Celery worker")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel=WARNING",
                f"--concurrency={self.concurrency}",
                "--pool=prefork",
                "-Q",
                self.queues,
                f"--hostname={self.hostname}",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
        )
        return self

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and its pool children): no warm shutdown."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


class BeatProcess:
    """A real `celery beat` (the production scheduler) with its schedule file in `folder`."""

    def __init__(self, folder: Path, **env: str) -> None:
        self.folder = folder
        self.env = worker_environment(**env)
        self.process: subprocess.Popen | None = None

    def start(self) -> BeatProcess:
        require_worker_marker("Celery beat")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel=WARNING",
                f"--schedule={self.folder / 'beat-schedule'}",
                f"--pidfile={self.folder / 'beat.pid'}",
            ],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
        )
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.2, message: str = ""):
    """Poll until predicate() is truthy; return its value or fail with `message`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(message or f"condition not met within {timeout} s")
