"""Time spent in Redis by the current request, for the request metrics.

A client built with `connection_class=timed_connection_class(url)` adds the time of every
command it sends and of every reply it reads to the request's total, which
`redis_time()` (the operations middleware) opens around each request. Outside a request
nothing is added.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from redis.connection import Connection, SSLConnection, UnixDomainSocketConnection

_spent: ContextVar[list[float] | None] = ContextVar("redis_time_spent", default=None)


@contextmanager
def redis_time() -> Iterator[Callable[[], float]]:
    """Add up the Redis time of the code inside; yields a function that reads the total."""
    cell = [0.0]
    token = _spent.set(cell)
    try:
        yield lambda: cell[0]
    finally:
        _spent.reset(token)


class _Timed:
    def send_packed_command(self, *args, **kwargs):
        cell = _spent.get()
        started = time.perf_counter()
        try:
            return super().send_packed_command(*args, **kwargs)  # type: ignore[misc]
        finally:
            if cell is not None:
                cell[0] += time.perf_counter() - started

    def read_response(self, *args, **kwargs):
        cell = _spent.get()
        started = time.perf_counter()
        try:
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        finally:
            if cell is not None:
                cell[0] += time.perf_counter() - started


class TimedConnection(_Timed, Connection):
    pass


class TimedSSLConnection(_Timed, SSLConnection):
    pass


class TimedUnixDomainSocketConnection(_Timed, UnixDomainSocketConnection):
    pass


def timed_connection_class(url: str) -> type[Connection] | type[UnixDomainSocketConnection]:
    """The timed counterpart of the connection class redis-py picks for `url`."""
    if url.startswith("rediss://"):
        return TimedSSLConnection
    if url.startswith("unix://"):
        return TimedUnixDomainSocketConnection
    return TimedConnection
