"""The demo webhook: configured, with deliveries in every state and consistent attempts."""

import orjson
import pytest
from django.test import Client
from django.utils import timezone

from apps.activity.demo import activity_seed_demo
from apps.webhooks.demo import webhook_seed_demo
from apps.webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def test_demo_webhook_has_deliveries_in_every_state_and_is_seeded_once(agent, owner):
    activity_seed_demo(agent=agent)
    assert webhook_seed_demo(agent=agent).endswith("60 deliveries")
    assert webhook_seed_demo(agent=agent) is None

    now = timezone.now()
    deliveries = list(WebhookDelivery.objects.filter(agent=agent).prefetch_related("attempt_rows"))
    assert {d.status for d in deliveries} == {"succeeded", "failed", "pending"}
    for delivery in deliveries:
        attempts = list(delivery.attempt_rows.all())
        assert [a.attempt for a in attempts] == list(range(1, delivery.attempts + 1))
        if attempts:  # a run that ended seconds ago waits for its first attempt
            assert delivery.response_status == attempts[-1].response_status
        for attempt in attempts:
            # Attempts happened: none is dated in the future.
            assert attempt.finished_at <= now
            # "Timed out" only after the whole read timeout; a quick failure is an answer.
            if attempt.status == "timeout":
                assert attempt.duration_ms >= 10_000
                assert attempt.response_status is None
            elif attempt.status == "failed":
                assert attempt.response_status == 503 and attempt.duration_ms < 10_000
        assert orjson.loads(delivery.body)["data"]["id"] == delivery.run_id
        if delivery.status == "pending":
            # Each failure scheduled one retry, the dispatcher's way of counting.
            assert delivery.next_attempt_at is not None
            assert delivery.retry_count == delivery.attempts

    client = Client()
    client.force_login(owner)
    html = client.get("/webhooks/").content.decode()
    # The newest deliveries keep failing: the badge says so, with the last error.
    assert 'data-state="failing"' in html and "hooks.example.com" in html
    assert 'id="webhook-last-error"' in html
    assert 'id="older-deliveries"' in html  # more than one page of deliveries
