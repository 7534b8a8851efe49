"""Liveness and readiness of a web process (GET /healthz and GET /readyz).

`/healthz` says the process answers and touches nothing. `/readyz` says whether it can serve:
one round trip each to the database (and its migrations table), Redis and the broker, and a
look at the embedding model's files, each with its state and the seconds it took; one down is
a 503. Celery workers are not among them: a web process serves without them (work waits in the
queue), and taking every web process out of a load balancer because a worker died would turn
a backlog into an outage. Workers and beat have their own checks (`manage.py worker_check`,
`manage.py beat_check`; docs/operations.md).

Errors are reported by their class name only: the endpoint is unauthenticated, and a driver's
message can name hosts and users. The full message goes to the log.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import redis
from django.conf import settings
from django.db import connection
from django.db.migrations.loader import MigrationLoader

logger = logging.getLogger("apps.operations")

UP, DOWN, OFF = "up", "down", "off"
# Each check waits at most this long for its service.
TIMEOUT_SECONDS = 2.0


class CheckFailed(Exception):
    """A check found its service reachable but not fit to serve (say, migrations missing)."""


@dataclass(frozen=True)
class CheckResult:
    state: str
    seconds: float
    error: str | None = None

    def as_dict(self) -> dict:
        result: dict = {"state": self.state, "seconds": round(self.seconds, 4)}
        if self.error:
            result["error"] = self.error
        return result


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return UP


@cache
def _migrations_on_disk() -> frozenset[tuple[str, str]]:
    """Every migration the code has, read from disk once per process."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return frozenset(loader.disk_migrations)


def check_migrations() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        applied = {(app, name) for app, name in cursor.fetchall()}
    missing = _migrations_on_disk() - applied
    if missing:
        raise CheckFailed(f"{len(missing)} migrations not applied")
    return UP


@cache
def _redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_connect_timeout=TIMEOUT_SECONDS, socket_timeout=TIMEOUT_SECONDS
    )


def check_redis() -> str:
    if not settings.REDIS_URL:
        return OFF  # the embedded default: an in-process cache and no rate-limit store
    _redis_client(settings.REDIS_URL).ping()
    return UP


def check_broker() -> str:
    from config.celery import app

    if app.conf.broker_url == "filesystem://":
        folder = Path(app.conf.broker_transport_options["data_folder_in"])
        if not folder.is_dir():
            raise CheckFailed("the broker folder is missing")
        return UP
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
        conn.default_channel  # noqa: B018 - opening a channel is the round trip (Redis: PING)
    return UP


def check_embedding_model() -> str:
    """Loadable: its runtime is installed and its files are in place (not loaded here: that
    takes seconds and 100 MB; the process loads it on its first semantic search)."""
    from apps.knowledge import embeddings

    for package in ("onnxruntime", "tokenizers"):
        if importlib.util.find_spec(package) is None:
            raise CheckFailed(f"{package} is not installed")
    embeddings.model_files()
    return UP


CHECKS: dict[str, Callable[[], str]] = {
    "database": check_database,
    "migrations": check_migrations,
    "redis": check_redis,
    "broker": check_broker,
    "embedding_model": check_embedding_model,
}


def run_check(name: str, check: Callable[[], str]) -> CheckResult:
    started = time.perf_counter()
    try:
        state = check()
    except Exception as exc:
        logger.warning("readiness: %s is down: %s: %s", name, exc.__class__.__name__, exc)
        return CheckResult(DOWN, time.perf_counter() - started, exc.__class__.__name__)
    return CheckResult(state, time.perf_counter() - started)


def readiness() -> dict[str, CheckResult]:
    results: dict[str, CheckResult] = {}
    for name, check in CHECKS.items():
        if name == "migrations" and results["database"].state == DOWN:
            results[name] = CheckResult(DOWN, 0.0, "database unavailable")
            continue
        results[name] = run_check(name, check)
    if results["database"].state == DOWN:
        # A broken connection is not reused by the next probe.
        connection.close_if_unusable_or_obsolete()
    return results


def is_ready(results: dict[str, CheckResult]) -> bool:
    return all(result.state != DOWN for result in results.values())
