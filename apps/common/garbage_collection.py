"""The cyclic garbage collector, tuned for a long-running web worker (issue 14's p99).

CPython's collector stops every thread of the process while it walks the objects it tracks. A
Django worker holds a few hundred thousand long-lived objects: modules, URL patterns, settings,
and what the first requests build and keep (caches, compiled statements, connections). Walking
them all in a full collection was the slowest 1 % of requests under load: with 16 connections
on the runs list, p99 was 80–140 ms with the collector as it comes, 22–33 ms with it off
(docs/performance.md).

`gc.freeze()` moves every object alive at that moment to a permanent generation the collector
no longer walks. The worker freezes what it holds when the application is loaded, and again at
each count of requests in `FREEZE_AFTER_REQUESTS` (after a collection, so that no garbage is
frozen), once what the first requests keep exists: p99 28–32 ms. Cycles made afterwards are collected as before,
so memory does not grow; each worker process counts its own requests.
"""

import gc
import threading
from collections.abc import Callable, Iterable
from typing import Any

# Requests after which a worker freezes what it holds: the first requests fill the caches, some
# only once a less common request (another list, filter or page kind) has come.
FREEZE_AFTER_REQUESTS = (200, 1000)

WsgiApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def freeze_after_warm_up(application: WsgiApplication) -> WsgiApplication:
    """`application`, its long-lived objects frozen now and after the first requests."""
    gc.freeze()
    lock = threading.Lock()
    served = 0
    pending = list(FREEZE_AFTER_REQUESTS)

    def frozen_when_warm(environ: dict[str, Any], start_response: Callable[..., Any]):
        nonlocal served
        if pending:  # only read once all freezes are done: no lock on the hot path
            with lock:
                served += 1
                if pending and served >= pending[0]:
                    pending.pop(0)
                    gc.collect()
                    gc.freeze()
        return application(environ, start_response)

    return frozen_when_warm
