"""The service's Prometheus metrics (prometheus-client), defined once, recorded anywhere.

Every process (gunicorn workers, Celery worker children, beat) writes its samples to files in
PROMETHEUS_MULTIPROC_DIR (the settings point it under VAR_DIR), and `/metrics` adds up the files
of every process of the machine (apps.operations.metrics). Values known only at scrape time
(queue depths, documents by status, readiness) are read there, not here. The list, with what
each metric answers, is in docs/operations.md.

Labels take values from small fixed sets (routes as patterns, task names, statuses, formats):
never ids, paths or anything a client chooses.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from prometheus_client import Counter, Histogram

NAMESPACE = "agent_console"
# Seconds: requests and searches are milliseconds; tasks and extractions up to minutes.
FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SHARE = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
SLOW = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

HTTP_REQUESTS = Counter(
    "http_requests",
    "Requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
    namespace=NAMESPACE,
)
HTTP_DURATION = Histogram(
    "http_request_duration_seconds",
    "Time to answer a request, by route pattern and method.",
    ["route", "method"],
    namespace=NAMESPACE,
    buckets=FAST,
)
HTTP_DATABASE = Histogram(
    "http_request_database_seconds",
    "Time a request spent in database queries, by route pattern.",
    ["route"],
    namespace=NAMESPACE,
    buckets=SHARE,
)
HTTP_REDIS = Histogram(
    "http_request_redis_seconds",
    "Time a request spent in Redis commands (rate limit, key cache, cache), by route pattern.",
    ["route"],
    namespace=NAMESPACE,
    buckets=SHARE,
)
RATE_LIMITED = Counter(
    "rate_limited_requests",
    "Requests refused by the rate limit (429), by route pattern.",
    ["route"],
    namespace=NAMESPACE,
)
CELERY_TASKS = Counter(
    "celery_tasks",
    "Celery tasks finished, by task name and outcome (the task's status word, or its state).",
    ["task", "outcome"],
    namespace=NAMESPACE,
)
CELERY_TASK_DURATION = Histogram(
    "celery_task_duration_seconds",
    "Run time of Celery tasks, by task name.",
    ["task"],
    namespace=NAMESPACE,
    buckets=SLOW,
)
EXTRACTION_DURATION = Histogram(
    "knowledge_extraction_duration_seconds",
    "Time to extract a document to markdown, by format and outcome (ok, failed).",
    ["format", "outcome"],
    namespace=NAMESPACE,
    buckets=SLOW,
)
EMBEDDING_DURATION = Histogram(
    "knowledge_embedding_batch_duration_seconds",
    "Time to embed one batch of chunks (KNOWLEDGE_EMBED_BATCH_SIZE), by document format.",
    ["format"],
    namespace=NAMESPACE,
    buckets=FAST,
)
EMBEDDED_CHUNKS = Counter(
    "knowledge_embedded_chunks",
    "Chunks embedded, by document format.",
    ["format"],
    namespace=NAMESPACE,
)
SEARCH_DURATION = Histogram(
    "knowledge_search_duration_seconds",
    "Time to answer a knowledge search, by mode (hybrid, keyword, semantic).",
    ["mode"],
    namespace=NAMESPACE,
    buckets=FAST,
)
WEBHOOK_DELIVERIES = Counter(
    "webhook_delivery_attempts",
    "Webhook delivery attempts, by outcome (succeeded, failed) and attempt number.",
    ["outcome", "attempt"],
    namespace=NAMESPACE,
)
OAUTH_TOKENS = Counter(
    "oauth_tokens_issued",
    "OAuth access tokens issued to connected applications, by grant type.",
    ["grant_type"],
    namespace=NAMESPACE,
)
MCP_TOOL_CALLS = Counter(
    "mcp_tool_calls",
    "Calls of the Agents MCP server's tools, by tool and outcome (ok, error).",
    ["tool", "outcome"],
    namespace=NAMESPACE,
)

F = TypeVar("F", bound=Callable[..., Any])


def timed(histogram: Histogram, **labels_from: str) -> Callable[[F], F]:
    """Observe a function's duration in `histogram`, each label taken from the argument named
    in `labels_from` (its default when the caller leaves it out):

        @timed(SEARCH_DURATION, mode="mode")
        def search_chunks(*, agent, query, limit, mode="hybrid"): ...
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            result = function(*args, **kwargs)
            # Observed only when the call answered: a refused argument makes no label value.
            bound = signature.bind_partial(*args, **kwargs)
            bound.apply_defaults()
            values = {label: str(bound.arguments.get(arg)) for label, arg in labels_from.items()}
            histogram.labels(**values).observe(time.perf_counter() - started)
            return result

        return wrapper  # type: ignore[return-value]

    return decorate
