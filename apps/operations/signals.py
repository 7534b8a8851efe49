"""Metrics from what other parts announce: Celery's task signals, the webhook attempts recorded,
OAuth tokens issued. Connected once per process by OperationsConfig.ready()."""

from __future__ import annotations

import logging
import re
import time

from celery import signals as celery_signals
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_save

from apps.common import metrics

logger = logging.getLogger("apps.operations")

# A task's return value is its outcome when it is a short status word ("ready", "busy", ...);
# anything else (counts, summaries) gives way to Celery's state, so labels stay a small set.
_STATUS_WORD = re.compile(r"^[a-z_]{1,24}$")
# Attempt numbers past this share one label value.
MAX_ATTEMPT_LABEL = 8

_started: dict[str, float] = {}


def _task_started(task_id: str | None = None, **_kwargs) -> None:
    if task_id:
        _started[task_id] = time.perf_counter()


def _task_finished(
    task_id: str | None = None, task=None, retval=None, state: str | None = None, **_kwargs
) -> None:
    started = _started.pop(task_id, None) if task_id else None
    name = getattr(task, "name", None) or "unknown"
    if state == "SUCCESS" and isinstance(retval, str) and _STATUS_WORD.match(retval):
        outcome = retval
    else:
        outcome = (state or "unknown").lower()
    metrics.CELERY_TASKS.labels(name, outcome).inc()
    if started is not None:
        metrics.CELERY_TASK_DURATION.labels(name).observe(time.perf_counter() - started)


def _attempt_recorded(sender, instance, created: bool, **_kwargs) -> None:
    if not created:
        return
    attempt = str(instance.attempt) if instance.attempt < MAX_ATTEMPT_LABEL else "8+"
    outcome = str(instance.status)
    # Counted once the attempt is committed: a rolled-back one never happened.
    transaction.on_commit(lambda: metrics.WEBHOOK_DELIVERIES.labels(outcome, attempt).inc())


def _token_issued(sender, request, token, **_kwargs) -> None:
    grant_type = request.POST.get("grant_type", "")
    if grant_type not in ("authorization_code", "refresh_token"):
        grant_type = "other"
    metrics.OAUTH_TOKENS.labels(grant_type).inc()


def make_metrics_folder() -> None:
    """prometheus-client writes a process's samples into this folder from its first sample on,
    and fails on a missing folder: made whenever the apps load, so that a management command or
    a script that searches or extracts (knowledge_reembed, the benchmarks) records its samples
    too instead of failing on a fresh VAR_DIR."""
    settings.PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)


def _serve_worker_metrics(sender=None, **_kwargs) -> None:
    """A worker's main process serves this machine's /metrics when WORKER_METRICS_PORT is set
    (a machine with workers and no web process)."""
    port = settings.WORKER_METRICS_PORT
    if not port:
        return
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(settings.PROMETHEUS_MULTIPROC_DIR))
    start_http_server(port, registry=registry)
    logger.info("worker metrics on port %s", port)


def connect() -> None:
    from oauth2_provider.signals import app_authorized

    from apps.webhooks.models import WebhookAttempt

    celery_signals.task_prerun.connect(_task_started, weak=False)
    celery_signals.task_postrun.connect(_task_finished, weak=False)
    celery_signals.worker_ready.connect(_serve_worker_metrics, weak=False)
    post_save.connect(_attempt_recorded, sender=WebhookAttempt, weak=False)
    app_authorized.connect(_token_issued, weak=False)
