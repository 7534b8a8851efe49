"""`score` records in POST /v1/ingest, and the `score.created` webhook event."""

import pytest
from standardwebhooks.webhooks import Webhook as StandardWebhook

from apps.scores.models import Score
from apps.webhooks.models import WebhookDelivery
from apps.webhooks.services import delivery_send_due, delivery_send_test
from tests.activity.factories import run_factory
from tests.webhooks.conftest import received
from tests.webhooks.factories import webhook_factory

pytestmark = pytest.mark.django_db


def _batch():
    return [
        {"type": "conversation", "id": "conv_a", "created_at": "2025-01-31T12:00:00Z"},
        {
            "type": "run",
            "id": "run_a",
            "conversation_id": "conv_a",
            "request_id": "req_a",
            "sdk_version": "5.0.0",
            "protocol_version": 1,
            "model_id": "gpt-4.1-mini",
            "status": "completed",
            "created_at": "2025-01-31T12:00:01Z",
        },
        {"type": "score", "id": "chk-1", "run_id": "run_a", "name": "grounded", "value": True},
    ]


def test_ingest_records_a_run_and_its_score_in_one_batch(make_api, agent):
    client = make_api(["activity:write"])
    response = client.post("/v1/ingest", json=_batch())
    assert response.status == 200, response.body
    assert response.json()["created"] == 3
    score = Score.objects.get(agent=agent, id="chk-1")
    assert (score.run_id, score.conversation_id, score.boolean_value) == ("run_a", "conv_a", True)
    assert (score.source, score.api_key_id) == ("api", client.key.pk)
    again = client.post("/v1/ingest", json=_batch()).json()
    assert again["unchanged"] == 3
    assert Score.objects.filter(agent=agent).count() == 1


def test_a_bad_score_record_keeps_nothing_of_the_batch(make_api, agent):
    client = make_api(["activity:write"])
    batch = _batch()
    batch[2]["value"] = {"nested": 1}
    response = client.post("/v1/ingest", json=batch)
    assert response.status == 400
    assert response.json()["message"].startswith("records[2].value:")
    assert not Score.objects.exists()
    batch = _batch()
    batch[2]["run_id"] = "run_elsewhere"
    response = client.post("/v1/ingest", json=batch)
    assert response.status == 400
    assert "no run 'run_elsewhere'" in response.json()["message"]
    assert not Score.objects.exists()
    from apps.activity.models import Run

    assert not Run.objects.filter(agent=agent).exists()


def test_an_unknown_record_type_names_score_among_the_kinds(make_api):
    client = make_api(["activity:write"])
    response = client.post("/v1/ingest", json=[{"type": "verdict"}])
    assert response.status == 400
    assert "score" in response.json()["message"]


@pytest.fixture
def receiver(httpserver, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    return httpserver


def test_a_new_score_is_a_signed_score_created_delivery(api, agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"), events=["score.created"])
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    run = run_factory(agent=agent)
    body = {"id": "s-1", "run_id": run.id, "name": "correctness", "value": 0.25}
    score = api.post("/v1/scores", json=body).json()
    [delivery] = WebhookDelivery.objects.filter(agent=agent)
    assert delivery.event_type == "score.created"
    assert delivery_send_due(delivery_id=delivery.pk) == "succeeded"
    [request] = received(receiver)
    payload = StandardWebhook(webhook.secret).verify(request.get_data(), dict(request.headers))
    assert payload["type"] == "score.created"
    assert payload["data"] == score
    # The same score again is not new: no second event.
    assert api.post("/v1/scores", json=body).status == 200
    assert WebhookDelivery.objects.filter(agent=agent).count() == 1


def test_an_unsubscribed_webhook_gets_no_score_events(api, agent):
    webhook_factory(agent=agent, events=["run.completed"])
    run = run_factory(agent=agent)
    api.post("/v1/scores", json={"run_id": run.id, "name": "x", "value": 1})
    assert not WebhookDelivery.objects.filter(event_type="score.created").exists()


def test_score_created_is_subscribable_and_test_sendable(api, agent, receiver):
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    response = api.patch(
        f"/v1/agents/{agent.pk}/webhook",
        json={"enabled": True, "url": receiver.url_for("/hook"), "events": ["score.created"]},
    )
    assert response.status == 200, response.body
    assert response.json()["events"] == ["score.created"]
    delivery = delivery_send_test(agent=agent, event_type="score.created")
    assert delivery.status == "succeeded"
    [request] = received(receiver)
    assert b'"type":"score.created"' in request.get_data()
