"""The first middleware: operations endpoints, and the request metrics of everything else.

`/healthz`, `/readyz` and `/metrics` are answered here, before Django checks the Host header
(a load balancer or Prometheus calls by address), before sessions, request logs and rate
limits: a probe every few seconds costs no log line and no database session. Every other
request is counted and timed by its route pattern, with the time it spent in the database
and in Redis.
"""

from __future__ import annotations

import functools
import time

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from apps.common import metrics
from apps.common.redis_timing import redis_time
from apps.operations import health
from apps.operations import metrics as exposition

UNMATCHED = "<unmatched>"


def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> HttpResponse:
    results = health.readiness()
    ready = health.is_ready(results)
    body = {
        "status": "ready" if ready else "unavailable",
        "checks": {name: result.as_dict() for name, result in results.items()},
    }
    response = JsonResponse(body, status=200 if ready else 503)
    response["Cache-Control"] = "no-store"
    # Not a server error to log (Django logs every 5xx): the check's own warning says why.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


ENDPOINTS = {"/healthz": healthz, "/readyz": readyz, "/metrics": exposition.metrics_view}


class _DatabaseTimer:
    """connection.execute_wrapper: adds up the time of every query of the request."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started


def route_of(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return f"/{match.route}" if match is not None and match.route else UNMATCHED


class OperationsMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        endpoint = ENDPOINTS.get(request.path_info)
        if endpoint is not None:
            if request.method not in ("GET", "HEAD"):
                response = HttpResponse(status=405)
                response["Allow"] = "GET, HEAD"
                return response
            return endpoint(request)

        started = time.perf_counter()
        database = _DatabaseTimer()
        with connection.execute_wrapper(database), redis_time() as redis_seconds:
            response = self.get_response(request)
        elapsed = time.perf_counter() - started
        route = route_of(request)
        method = request.method if request.method in KNOWN_METHODS else "other"
        requests, duration, in_database, in_redis = _series(route, method, response.status_code)
        requests.inc()
        duration.observe(elapsed)
        in_database.observe(database.seconds)
        in_redis.observe(redis_seconds())
        if response.status_code == 429:
            metrics.RATE_LIMITED.labels(route).inc()
        return response


@functools.cache
def _series(route: str, method: str, status: int) -> tuple:
    """The labelled series of one kind of request, looked up once per process: `labels()` costs
    about as much as the update itself (routes, methods and statuses are few)."""
    return (
        metrics.HTTP_REQUESTS.labels(route, method, str(status)),
        metrics.HTTP_DURATION.labels(route, method),
        metrics.HTTP_DATABASE.labels(route),
        metrics.HTTP_REDIS.labels(route),
    )


KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
