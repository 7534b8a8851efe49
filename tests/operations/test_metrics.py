"""GET /metrics, scraped and parsed by prometheus-client's own parser after real requests, real
tasks on a real worker, real webhook attempts, a real OAuth grant and a real MCP tool call.

Every process of the run writes to one metrics folder (as on one production machine), and other
test processes may run at the same time: counters are compared before and after, and only
grow by what this test did or more.
"""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from werkzeug import Response

from apps.knowledge.models import KnowledgeDocument
from tests.activity.factories import run_factory
from tests.knowledge.conftest import upload
from tests.mcp_server.conftest import mcp_post, obtain_grant
from tests.metrics import NS, scrape, value
from tests.webhooks.factories import webhook_factory
from tests.workers import WorkerProcess, process_queues, purge_test_queues, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _embed_outcomes(samples) -> dict[str, float]:
    """knowledge.embed's counts by outcome, for a failure's message."""
    counted = {}
    for (name, labels), count in samples.items():
        labelled = dict(labels)
        if name == NS + "celery_tasks_total" and labelled.get("task") == "knowledge.embed":
            counted[labelled["outcome"]] = count
    return counted


def test_metrics_need_an_allowed_address_or_the_token(settings):
    assert Client().get("/metrics").status_code == 200  # the test client calls from 127.0.0.1
    outside = Client(REMOTE_ADDR="203.0.113.9")
    assert outside.get("/metrics").status_code == 403
    settings.METRICS_TOKEN = "scrape-token-0123456789"
    assert outside.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    answer = outside.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789")
    assert answer.status_code == 200
    settings.METRICS_ALLOWED_NETWORKS = ["203.0.113.0/24"]
    settings.METRICS_TOKEN = ""
    assert outside.get("/metrics").status_code == 200
    # A reverse proxy on the machine relays from loopback: the address proves nothing then.
    relayed = Client().get("/metrics", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert relayed.status_code == 403


def test_requests_are_counted_by_route_with_their_database_and_redis_time(
    make_api, agent, settings
):
    api = make_api()
    before = scrape()
    assert api.get("/v1/knowledge").status == 200
    assert api.get("/v1/knowledge/doc_missing").status == 404
    assert (
        api.post("/v1/knowledge/search", json={"query": "kettle", "mode": "keyword"}).status == 200
    )
    settings.API_RATE_LIMIT = "1/minute"
    limited = make_api()
    assert limited.get("/v1/knowledge").status == 200
    assert limited.get("/v1/knowledge").status == 429
    after = scrape()

    def grew(name: str, by: float = 1, **labels: str) -> bool:
        return value(after, name, **labels) - value(before, name, **labels) >= by

    route = "/v1/knowledge"
    assert grew("http_requests_total", 2, route=route, method="GET", status="200")
    assert grew("http_requests_total", route="/v1/knowledge/<str:id>", method="GET", status="404")
    assert grew("http_requests_total", route=route, method="GET", status="429")
    assert grew("http_request_duration_seconds_count", 3, route=route, method="GET")
    assert grew("http_request_duration_seconds_bucket", 3, route=route, method="GET", le="+Inf")
    assert grew("http_request_database_seconds_count", 3, route=route)
    assert value(after, "http_request_database_seconds_sum", route=route) > value(
        before, "http_request_database_seconds_sum", route=route
    )
    # The rate limiter and the key cache are one Redis call per request.
    assert value(after, "http_request_redis_seconds_sum", route=route) > value(
        before, "http_request_redis_seconds_sum", route=route
    )
    assert grew("rate_limited_requests_total", route=route)
    assert grew("knowledge_search_duration_seconds_count", mode="keyword")
    # Nothing is labelled by a concrete path or id.
    assert not [key for key in after if "doc_missing" in str(key)]


@pytest.mark.worker
def test_tasks_extraction_embedding_queues_and_documents(api, settings):
    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    purge_test_queues()
    before = scrape()
    worker = WorkerProcess(MEDIA_ROOT=str(settings.MEDIA_ROOT)).start()
    try:
        data = b"# Kettle\n\nDescale the kettle monthly.\n\n## Filter\n\nRinse the filter.\n"
        response = api.post("/v1/knowledge/files", data={"file": upload(data, "kettle.md")})
        document_id = response.json()["id"]
        wait_for(
            lambda: KnowledgeDocument.objects.filter(
                pk=document_id, status="ready", embedded_chunk_count__gt=0
            ).exists(),
            timeout=90,
            message="not ready and embedded",
        )
        kind = KnowledgeDocument.objects.get(pk=document_id).kind
        # The worker counts a task once it returns, just after its last write; a run that hands
        # over ("more") is followed by one that ends "done". The counts are the run's shared
        # metrics folder: a failure prints them before and after (once, the make-run tests
        # emptied that folder mid-test; they no longer use it).
        try:
            wait_for(
                lambda: (
                    value(scrape(), "celery_tasks_total", task="knowledge.embed", outcome="done")
                    > value(before, "celery_tasks_total", task="knowledge.embed", outcome="done")
                ),
                timeout=90,
            )
        except AssertionError:
            raise AssertionError(
                "knowledge.embed never counted done; its outcomes counted before and after: "
                f"{_embed_outcomes(before)}, {_embed_outcomes(scrape())}"
            ) from None
    finally:
        worker.stop()
    after = scrape()

    def grew(name: str, **labels: str) -> bool:
        return value(after, name, **labels) > value(before, name, **labels)

    assert grew("celery_tasks_total", task="knowledge.ingest", outcome="ready")
    assert grew("celery_task_duration_seconds_count", task="knowledge.ingest")
    assert grew("celery_task_duration_seconds_count", task="knowledge.embed")
    assert grew("knowledge_extraction_duration_seconds_count", format=kind, outcome="ok")
    assert grew("knowledge_embedding_batch_duration_seconds_count", format=kind)
    assert grew("knowledge_embedded_chunks_total", format=kind)
    bulk, interactive = process_queues()
    assert (NS + "celery_queue_length", frozenset({("queue", interactive)})) in after
    assert (NS + "celery_queue_length", frozenset({("queue", bulk)})) in after
    assert value(after, "knowledge_documents", status="ready") >= 1
    for check in ("database", "migrations", "redis", "broker", "embedding_model"):
        assert value(after, "readiness_check_up", check=check) == 1, check


def test_queue_depth_counts_waiting_tasks():
    from apps.knowledge import tasks

    purge_test_queues()
    bulk, _interactive = process_queues()
    for _ in range(3):
        tasks.embed.apply_async(args=["doc_waiting"], retry=False)
    try:
        assert value(scrape(), "celery_queue_length", queue=bulk) == 3
    finally:
        purge_test_queues()


def test_webhook_attempts_are_counted_by_outcome_and_attempt(agent, httpserver, settings):
    from apps.webhooks.services import delivery_record_for_run, delivery_send_due

    settings.NETGUARD_ALLOW_LOOPBACK = True
    webhook_factory(agent=agent, url=httpserver.url_for("/hook"))
    answers = iter([Response("no", status=500), Response("ok")])
    httpserver.expect_request("/hook").respond_with_handler(lambda request: next(answers))
    before = scrape()
    for _ in range(2):
        delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
        delivery_send_due(delivery_id=delivery.pk)
    after = scrape()
    for outcome in ("failed", "succeeded"):
        labels = {"outcome": outcome, "attempt": "1"}
        assert (
            value(after, "webhook_delivery_attempts_total", **labels)
            - value(before, "webhook_delivery_attempts_total", **labels)
            >= 1
        ), outcome


def test_oauth_tokens_and_mcp_tool_calls_are_counted(owner, agent):
    before = scrape()
    grant = obtain_grant(owner, agent, ["knowledge:read"])
    answer = mcp_post(grant.access_token, "tools/call", {"name": "list_documents", "arguments": {}})
    assert answer.status_code == 200, answer.content
    after = scrape()
    tokens = ("oauth_tokens_issued_total", {"grant_type": "authorization_code"})
    assert value(after, tokens[0], **tokens[1]) - value(before, tokens[0], **tokens[1]) >= 1
    calls = ("mcp_tool_calls_total", {"tool": "list_documents", "outcome": "ok"})
    assert value(after, calls[0], **calls[1]) - value(before, calls[0], **calls[1]) >= 1


def test_metrics_reset_empties_the_folder_before_start(settings, tmp_path):
    from django.core.management import call_command

    settings.PROMETHEUS_MULTIPROC_DIR = tmp_path / "metrics"
    settings.PROMETHEUS_MULTIPROC_DIR.mkdir()
    (settings.PROMETHEUS_MULTIPROC_DIR / "counter_4242.db").write_bytes(b"left from before")
    (settings.PROMETHEUS_MULTIPROC_DIR / "notes.txt").write_text("not ours")
    call_command("metrics_reset", verbosity=0)
    assert [p.name for p in settings.PROMETHEUS_MULTIPROC_DIR.iterdir()] == ["notes.txt"]


def test_dashboard_and_alert_rules_use_only_exported_series():
    """Every agent_console_* series named in docs/grafana-dashboard.json and
    docs/prometheus-alerts.yml is one the service exports."""
    import json
    import re

    import yaml
    from prometheus_client import Counter, Histogram

    from apps.common import metrics

    exported = {"celery_queue_length", "knowledge_documents", "readiness_check_up"}
    for metric in vars(metrics).values():
        if isinstance(metric, Counter):
            exported.add(metric._name.removeprefix(NS) + "_total")
        elif isinstance(metric, Histogram):
            base = metric._name.removeprefix(NS)
            exported.update({base + "_bucket", base + "_count", base + "_sum"})

    docs = django_settings.BASE_DIR / "docs"
    dashboard = json.loads((docs / "grafana-dashboard.json").read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    rules = yaml.safe_load((docs / "prometheus-alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in alerts} >= {
        "AgentConsoleNotReady",
        "AgentConsoleQueueGrowing",
        "AgentConsoleWebhookFailures",
    }
    expressions += [rule["expr"] for rule in alerts]
    used = {name for expr in expressions for name in re.findall(NS + r"(\w+)", expr)}
    assert used and used <= exported, used - exported


@pytest.mark.worker
def test_a_worker_serves_the_machines_metrics_on_its_port(settings):
    """A machine with workers and no web process: the worker's main process serves them."""
    import urllib.request

    from tests.redis_server import free_port

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    Client().get("/v1/connection")  # something of this process's to find in the files
    port = free_port()
    worker = WorkerProcess(name="metrics", WORKER_METRICS_PORT=str(port)).start()
    url = f"http://127.0.0.1:{port}/metrics"

    def read() -> str | None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read().decode()
        except OSError:
            return None

    try:
        text = wait_for(read, timeout=90, message="the worker never served its metrics")
    finally:
        worker.stop()
    names = {sample.name for f in text_string_to_metric_families(text) for sample in f.samples}
    assert NS + "http_requests_total" in names


def test_a_script_on_a_fresh_var_dir_records_samples(tmp_path):
    """A process that is neither the web nor a worker (a management command, a benchmark) and
    records a metric finds its metrics folder made: prometheus-client fails on a missing one."""
    import os
    import subprocess
    import sys

    script = (
        "import django; django.setup()\n"
        "from apps.common import metrics\n"
        "metrics.EXTRACTION_DURATION.labels('text', 'ok').observe(0.01)\n"
        "print('recorded')\n"
    )
    env = {
        **os.environ,
        "VAR_DIR": str(tmp_path / "fresh"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("recorded")
    assert list((tmp_path / "fresh" / "prometheus").glob("histogram_*.db"))
