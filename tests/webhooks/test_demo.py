"""The demo webhook: configured, with deliveries in every state and consistent attempts."""

import orjson
import pytest
from django.test import Client

from apps.activity.demo import activity_seed_demo
from apps.webhooks.demo import webhook_seed_demo
from apps.webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def test_demo_webhook_has_deliveries_in_every_state_and_is_seeded_once(agent, owner):
    activity_seed_demo(agent=agent)
    assert webhook_seed_demo(agent=agent).endswith("60 deliveries")
    assert webhook_seed_demo(agent=agent) is None

    deliveries = list(WebhookDelivery.objects.filter(agent=agent).prefetch_related("attempt_rows"))
    assert {d.status for d in deliveries} == {"succeeded", "failed", "pending"}
    for delivery in deliveries:
        attempts = list(delivery.attempt_rows.all())
        assert [a.attempt for a in attempts] == list(range(1, delivery.attempts + 1))
        assert delivery.response_status == attempts[-1].response_status
        assert orjson.loads(delivery.body)["data"]["id"] == delivery.run_id
        if delivery.status == "pending":
            # Each failure scheduled one retry, the dispatcher's way of counting.
            assert delivery.next_attempt_at is not None
            assert delivery.retry_count == delivery.attempts

    client = Client()
    client.force_login(owner)
    html = client.get("/webhooks/").content.decode()
    assert "Active" in html and "hooks.example.com" in html
    assert 'id="older-deliveries"' in html  # more than one page of deliveries
