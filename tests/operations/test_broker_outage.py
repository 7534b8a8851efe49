"""While the broker is down, a request that queues work still answers at once.

The row is committed first; the publish fails on its first refused connection and a sweeper
queues the work once the broker is back (tests/knowledge/test_recovery_timing.py and
tests/webhooks/test_recovery_timing.py show that part with real workers). Before the broker's
transport got `max_retries: 0` (config/settings.py), kombu retried the refused connection for
CELERY_BROKER_CONNECTION_TIMEOUT, so each of these requests waited 2 s or more.
"""

from __future__ import annotations

import time

import pytest

from apps.knowledge.models import KnowledgeDocument
from apps.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.knowledge.conftest import upload
from tests.webhooks.factories import webhook_factory
from tests.workers import broker_unreachable

# Committed for real, so the publish runs where production runs it: inside the request.
pytestmark = pytest.mark.django_db(transaction=True)

# Far under the 2 s each publish waited before, far over what these requests take here.
AT_ONCE_SECONDS = 1.0


def _completed_run(run_id: str) -> list[dict]:
    return [
        {"type": "conversation", "id": f"conv_{run_id}", "created_at": "2026-12-01T12:00:00Z"},
        {
            "type": "run",
            "id": run_id,
            "conversation_id": f"conv_{run_id}",
            "request_id": f"req_{run_id}",
            "sdk_version": "5.0.0",
            "protocol_version": 1,
            "model_id": "gpt-4.1-mini",
            "status": "completed",
            "created_at": "2026-12-01T12:00:01Z",
        },
    ]


def test_a_run_with_a_webhook_is_recorded_at_once_and_its_delivery_waits_for_the_sweeper(
    make_api, agent, caplog
):
    webhook_factory(agent=agent)
    client = make_api(["activity:write"])
    with broker_unreachable():
        started = time.monotonic()
        response = client.post("/v1/ingest", json=_completed_run("run_outage"))
        took = time.monotonic() - started
    assert response.status == 200, response.body
    assert took < AT_ONCE_SECONDS, f"the request waited {took:.2f} s for the broker"
    delivery = WebhookDelivery.objects.get(webhook__agent=agent)
    assert delivery.status == DeliveryStatus.PENDING  # a due row: the dispatcher's sweep sends it
    assert "the sweeper will send it" in caplog.text


def test_an_upload_is_accepted_at_once_and_marked_for_the_next_sweep(api):
    with broker_unreachable():
        started = time.monotonic()
        response = api.post(
            "/v1/knowledge/files", data={"file": upload(b"# Outage\n\nUploaded during it.\n")}
        )
        took = time.monotonic() - started
    assert response.status == 201, response.body
    assert took < AT_ONCE_SECONDS, f"the upload waited {took:.2f} s for the broker"
    document = KnowledgeDocument.objects.get(pk=response.json()["id"])
    assert (document.status, document.queued_at) == ("processing", None)
