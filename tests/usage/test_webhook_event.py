"""The `usage.threshold_reached` event through the webhooks API: subscribable, its deliveries
carry `run_id: null`, a test send has the real event's shape, and it is really sent."""

from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pytest

from apps.usage.services import credit_limit_set
from apps.webhooks.models import WebhookDelivery
from apps.webhooks.services import deliveries_dispatch_due
from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db

EVENT = "usage.threshold_reached"


@pytest.fixture
def receiver(httpserver, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    settings.WEBHOOK_CONNECT_TIMEOUT = 2
    settings.WEBHOOK_READ_TIMEOUT = 2
    httpserver.expect_request("/hook").respond_with_data("ok")
    return httpserver


def subscribe(api, agent, receiver):
    response = api.patch(
        f"/v1/agents/{agent.pk}/webhook",
        json={"url": receiver.url_for("/hook"), "events": [EVENT], "enabled": True},
    )
    assert response.status == 200, response.body
    assert response.json()["events"] == [EVENT]


def test_a_reached_threshold_is_delivered_and_listed_with_a_null_run_id(
    api, agent, workspace, owner, receiver, time_machine
):
    time_machine.move_to(datetime(2026, 5, 20, 12, tzinfo=UTC), tick=False)
    subscribe(api, agent, receiver)
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(2))
    record_run(agent, at=datetime(2026, 5, 20, 11, tzinfo=UTC), credits_charged=1.7)

    assert deliveries_dispatch_due(budget_seconds=5)["sent"] == 1
    [(request, _response)] = receiver.log
    body = orjson.loads(request.get_data())
    assert body["type"] == EVENT and body["data"]["threshold_percent"] == 80

    listed = api.get(f"/v1/agents/{agent.pk}/webhook/deliveries", params={"event_type": EVENT})
    [item] = listed.json()["data"]
    assert item["run_id"] is None and item["event_type"] == EVENT
    assert item["status"] == "succeeded"


def test_a_test_send_has_the_shape_of_the_real_event(api, agent, workspace, owner, receiver):
    subscribe(api, agent, receiver)
    response = api.post(f"/v1/agents/{agent.pk}/webhook/test", json={"event_type": EVENT})
    assert response.status == 200, response.body
    assert response.json()["run_id"] is None and response.json()["is_test"] is True
    sample = orjson.loads(WebhookDelivery.objects.get(is_test=True).body)["data"]

    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(1))
    record_run(agent, at=datetime.now(UTC), credits_charged=5.0)
    real = orjson.loads(WebhookDelivery.objects.filter(is_test=False).first().body)["data"]
    assert list(sample) == list(real)
    assert {key: type(value) for key, value in sample.items()} == {
        key: type(value) for key, value in real.items()
    }
    assert sample["percent_used"] == 81.25 and sample["workspace_id"] == workspace.pk
