"""GET /metrics: the Prometheus exposition of every process of this machine, plus what is read
at scrape time.

Counters and histograms come from the files each process writes (apps.common.metrics,
prometheus-client's multiprocess mode). Gauges that describe shared state are read when
Prometheus asks, once per scrape, by whichever process answers: the depth of each Celery
queue, documents by status, and the readiness checks. A failed read leaves its series out
rather than failing the scrape.

Access: a request from METRICS_ALLOWED_NETWORKS that no reverse proxy relayed, or one carrying
`Authorization: Bearer <METRICS_TOKEN>`; anything else is 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterator
from functools import cache

from django.conf import settings
from django.db.models import Count, F
from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from apps.common.metrics import NAMESPACE

logger = logging.getLogger("apps.operations")


# A request relayed by a reverse proxy carries one of these; only the token opens /metrics then.
PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


@cache
def _allowed_networks(
    networks: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def may_read_metrics(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
    if any(header in request.META for header in PROXY_HEADERS):
        # Relayed by a proxy: REMOTE_ADDR is the proxy's (often loopback), not the caller's.
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(
        address in network
        for network in _allowed_networks(tuple(settings.METRICS_ALLOWED_NETWORKS))
    )


class StateCollector(Collector):
    """Gauges read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        for read in (_queue_depths, _documents_by_status, _readiness):
            try:
                yield read()
            except Exception as exc:
                logger.warning("metrics: %s failed: %s", read.__name__, exc.__class__.__name__)

    def describe(self) -> list[Metric]:
        return []  # read only when scraped, never at registration


def _queue_depths() -> Metric:
    from config.celery import app

    family = GaugeMetricFamily(
        f"{NAMESPACE}_celery_queue_length", "Tasks waiting in each Celery queue.", labels=["queue"]
    )
    queues = (app.conf.interactive_queue, app.conf.webhook_queue, app.conf.task_default_queue)
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        for queue in queues:
            # Not passive: Redis drops an empty list, and a passive declare of it is an error.
            _name, waiting, _consumers = channel.queue_declare(queue=queue)
            family.add_metric([queue], waiting)
    return family


def _documents_by_status() -> Metric:
    from apps.knowledge.models import KnowledgeDocument

    family = GaugeMetricFamily(
        f"{NAMESPACE}_knowledge_documents",
        "Knowledge documents by status; `embedding` counts ready ones not fully embedded yet.",
        labels=["status"],
    )
    counts = dict.fromkeys(KnowledgeDocument.Status.values, 0)
    counts.update(
        KnowledgeDocument.objects.order_by()
        .values_list("status")
        .annotate(count=Count("pk"))
        .values_list("status", "count")
    )
    for status, count in sorted(counts.items()):
        family.add_metric([status], count)
    # The knowledge_doc_embedding partial index holds exactly these rows.
    embedding = KnowledgeDocument.objects.filter(
        status=KnowledgeDocument.Status.READY, embedded_chunk_count__lt=F("chunk_count")
    ).count()
    family.add_metric(["embedding"], embedding)
    return family


def _readiness() -> Metric:
    from apps.operations import health

    family = GaugeMetricFamily(
        f"{NAMESPACE}_readiness_check_up",
        "1 when the readiness check passes (or is off), 0 when it is down (as GET /readyz).",
        labels=["check"],
    )
    for name, result in health.readiness().items():
        family.add_metric([name], 0 if result.state == health.DOWN else 1)
    return family


def exposition() -> bytes:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(settings.PROMETHEUS_MULTIPROC_DIR))
    registry.register(StateCollector())
    return generate_latest(registry)


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not may_read_metrics(request):
        return HttpResponse(
            "Forbidden: /metrics needs METRICS_TOKEN or an address in METRICS_ALLOWED_NETWORKS.\n",
            status=403,
            content_type="text/plain",
        )
    response = HttpResponse(exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
    response["Cache-Control"] = "no-store"
    return response
