"""Machine-wide marks and locks for periodic work: "one of these at a time", "one queued".

A periodic dispatcher that beat queues every few seconds must not run twice at once (a run
in progress makes the next tick a no-op) and must not pile its ticks up on a busy queue (one
tick waiting is enough). Both need state every process shares:

- with Redis (REDIS_URL): a key set with NX and an expiry; a lock is released only by its
  holder (redis-py's `Lock`, a compare-and-delete script), and an expired one lets the next run
  in, so a killed holder blocks nothing longer than its `ttl`;
- on the embedded default (one machine, no Redis): files in VAR_DIR/locks; a lock is an
  `flock` the kernel drops when its process dies, a mark a file whose age is its expiry.

Names are namespaced by the caller (see `apps.webhooks.tasks`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

PREFIX = "singleflight:"


@cache
def _client(url: str) -> redis.Redis:
    # redis-py's pool notices a fork and opens new connections in the child.
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)


def _redis() -> redis.Redis | None:
    return _client(settings.REDIS_URL) if settings.REDIS_URL else None


def _folder() -> Path:
    folder = Path(settings.VAR_DIR) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def mark(name: str, *, ttl: float) -> bool:
    """Set the mark `name` for `ttl` seconds; False when it was already set (and unexpired).
    A broker or Redis that cannot answer counts as unmarked: the caller goes ahead."""
    client = _redis()
    if client is not None:
        try:
            return bool(client.set(PREFIX + name, "1", nx=True, px=int(ttl * 1000)))
        except (redis.RedisError, OSError) as exc:
            logger.warning("single-flight mark %s: Redis unavailable (%s)", name, exc)
            return True
    path = _folder() / (_file_name(name) + ".mark")
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < ttl:
                    return False
                path.unlink()  # expired: take it over
            except FileNotFoundError:
                pass
    return False


def unmark(name: str) -> None:
    client = _redis()
    if client is not None:
        try:
            client.delete(PREFIX + name)
        except (redis.RedisError, OSError) as exc:
            logger.warning("single-flight unmark %s: Redis unavailable (%s)", name, exc)
        return
    with contextlib.suppress(FileNotFoundError):
        (_folder() / (_file_name(name) + ".mark")).unlink()


@contextlib.contextmanager
def held(name: str, *, ttl: float) -> Iterator[bool]:
    """Try to take the lock `name` without waiting; yields whether this caller holds it.

    With Redis the lock expires after `ttl` seconds (its holder must finish sooner: the
    dispatcher's own budget is shorter); on the embedded default it lasts until the holder's
    process releases it or dies. Redis down: yields True (better a doubled run, whose claims
    use SKIP LOCKED, than none).
    """
    client = _redis()
    if client is not None:
        lock = client.lock(PREFIX + name, timeout=ttl, blocking=False)
        try:
            acquired = bool(lock.acquire())
        except (redis.RedisError, OSError) as exc:
            logger.warning("single-flight lock %s: Redis unavailable (%s)", name, exc)
            yield True
            return
        try:
            yield acquired
        finally:
            if acquired:
                with contextlib.suppress(redis.RedisError, OSError):
                    lock.release()
        return
    path = _folder() / (_file_name(name) + ".lock")
    descriptor = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def is_held(name: str) -> bool:
    """Whether someone holds the lock `name` now (for tests and the console)."""
    client = _redis()
    if client is not None:
        return bool(client.exists(PREFIX + name))
    with held(name, ttl=1) as acquired:
        return not acquired
