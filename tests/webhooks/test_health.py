"""Webhook health that tells the truth (issue 26, item 2): healthy / failing since ... with the
last error / paused / disabled, from the attempts the dispatcher records; one selector for the
page and the API; saving or disabling without checking an unchanged URL again; and "retry all
failed since" (Svix's recover)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict
from apps.webhooks import selectors, services
from apps.webhooks.models import Webhook, WebhookDelivery
from tests.webhooks.conftest import received
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db

HEALTH_KEYS = {
    "object",
    "agent_id",
    "state",
    "since",
    "failing_since",
    "last_attempt_at",
    "last_success_at",
    "last_error",
    "last_error_at",
    "waiting_deliveries",
    "failed_deliveries",
    "counts_capped",
    "auto_paused",
}
# `.invalid` never resolves (RFC 2606): a saved URL whose host stopped resolving.
UNRESOLVABLE = "https://hooks.example.invalid/agent"


def _send_due(count: int) -> None:
    for _ in range(count):
        services.deliveries_dispatch_due(max_deliveries=1)


def test_every_attempt_failing_is_failing_since_the_first_failure(agent, receiver, settings):
    settings.WEBHOOK_PAUSE_AFTER_FAILURES = 100
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("down", status=503)
    first = delivery_factory(webhook=webhook)
    delivery_factory(webhook=webhook)
    delivery_factory(webhook=webhook)

    assert selectors.webhook_health(agent=agent).state == "healthy"  # nothing tried yet
    services.delivery_send_due(delivery_id=first.pk)
    first_failure = Webhook.objects.get(pk=webhook.pk).failing_since
    services.deliveries_dispatch_due()

    health = selectors.webhook_health(agent=agent)
    assert health.state == "failing" and health.label == "Failing"
    assert health.since == first_failure is not None
    assert health.last_error == "The endpoint answered 503 Service Unavailable."
    assert health.last_success_at is None
    # The deliveries pile up waiting for their retries; the badge counts them.
    assert health.waiting == 3 and health.failed == 0
    assert len(received(receiver)) == 3


def test_a_success_after_failures_is_healthy_again(agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_ordered_request("/hook").respond_with_data("down", status=500)
    receiver.expect_ordered_request("/hook").respond_with_data("ok")
    services.delivery_send_test(agent=agent)
    assert selectors.webhook_health(agent=agent).state == "failing"

    services.delivery_send_test(agent=agent)

    health = selectors.webhook_health(agent=agent)
    assert health.state == "healthy"
    assert health.failing_since is None and health.since is None
    assert health.last_success_at is not None
    assert Webhook.objects.get(pk=webhook.pk).last_attempt_at == health.last_success_at


def test_paused_after_failures_says_so_and_keeps_the_last_error(agent, receiver, settings):
    settings.WEBHOOK_RETRY_SCHEDULE = []
    settings.WEBHOOK_PAUSE_AFTER_FAILURES = 2
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("no", status=410)
    for _ in range(2):
        delivery_factory(webhook=webhook)
    services.deliveries_dispatch_due()

    health = selectors.webhook_health(agent=agent)
    assert health.state == "paused"
    assert health.auto_paused
    assert health.since == Webhook.objects.get(pk=webhook.pk).paused_at
    assert health.failing_since is not None
    assert health.last_error == "The endpoint answered 410 Gone."
    assert health.failed == 2


def test_owner_pause_disabled_and_unconfigured(agent, sibling_agent):
    webhook_factory(agent=agent, paused_at=timezone.now())
    paused = selectors.webhook_health(agent=agent)
    assert (paused.state, paused.auto_paused) == ("paused", False)

    Webhook.objects.filter(agent=agent).update(paused_at=None, enabled=False)
    assert selectors.webhook_health(agent=agent).state == "disabled"
    assert selectors.webhook_health(agent=sibling_agent).state == "not_configured"


def test_events_and_enabled_change_without_checking_an_unchanged_url(agent):
    webhook_factory(agent=agent, url=UNRESOLVABLE)

    services.webhook_update(agent=agent, url=UNRESOLVABLE, events=["run.failed"], enabled=False)

    webhook = Webhook.objects.get(agent=agent)
    assert (webhook.url, webhook.events, webhook.enabled) == (UNRESOLVABLE, ["run.failed"], False)
    services.webhook_update(agent=agent, enabled=True)
    assert Webhook.objects.get(agent=agent).enabled


def test_a_changed_url_is_still_checked(agent):
    webhook_factory(agent=agent, url=UNRESOLVABLE)

    with pytest.raises(BadRequest) as refused:
        services.webhook_update(agent=agent, url="https://other.example.invalid/x", enabled=False)

    assert refused.value.message.startswith("url:")
    webhook = Webhook.objects.get(agent=agent)
    assert (webhook.url, webhook.enabled) == (UNRESOLVABLE, True)  # nothing changed


def test_recover_sends_again_the_failed_deliveries_since_a_time(agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    now = timezone.now()
    recent = [
        delivery_factory(
            webhook=webhook,
            status="failed",
            next_attempt_at=None,
            retry_count=6,
            created_at=now - timedelta(hours=h),
        )
        for h in (1, 2)
    ]
    old = delivery_factory(
        webhook=webhook, status="failed", next_attempt_at=None, created_at=now - timedelta(days=3)
    )
    test_send = delivery_factory(
        webhook=webhook, status="failed", is_test=True, next_attempt_at=None
    )
    succeeded = delivery_factory(webhook=webhook, status="succeeded", next_attempt_at=None)
    since = now - timedelta(hours=3)
    assert selectors.delivery_recoverable(agent=agent, since=since).count() == 2

    assert services.deliveries_recover(agent=agent, since=since) == 2

    statuses = dict(WebhookDelivery.objects.values_list("pk", "status"))
    assert [statuses[d.pk] for d in recent] == ["pending", "pending"]
    assert (statuses[old.pk], statuses[test_send.pk], statuses[succeeded.pk]) == (
        "failed",
        "failed",
        "succeeded",
    )
    receiver.expect_request("/hook").respond_with_data("ok")
    services.deliveries_dispatch_due()
    assert len(received(receiver)) == 2
    assert {WebhookDelivery.objects.get(pk=d.pk).status for d in recent} == {"succeeded"}


def test_recover_while_paused_holds_them_until_resumed(agent):
    webhook = webhook_factory(agent=agent, paused_at=timezone.now())
    failed = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)

    assert services.deliveries_recover(agent=agent, since=failed.created_at) == 1

    failed.refresh_from_db()
    assert (failed.status, failed.next_attempt_at) == ("paused", None)
    services.webhook_update(agent=agent, paused=False)
    failed.refresh_from_db()
    assert failed.status == "pending" and failed.next_attempt_at is not None


def test_recover_refuses_a_future_time_and_a_webhook_without_url(agent, sibling_agent):
    webhook_factory(agent=agent)
    with pytest.raises(BadRequest):
        services.deliveries_recover(agent=agent, since=timezone.now() + timedelta(hours=1))
    with pytest.raises(Conflict):
        services.deliveries_recover(agent=sibling_agent, since=timezone.now())


def test_recover_never_touches_another_agents_deliveries(agent, sibling_agent):
    webhook_factory(agent=agent)
    theirs = delivery_factory(
        webhook=webhook_factory(agent=sibling_agent), status="failed", next_attempt_at=None
    )
    assert services.deliveries_recover(agent=agent, since=theirs.created_at) == 0
    theirs.refresh_from_db()
    assert theirs.status == "failed"


# --- API (extensions) -----------------------------------------------------------------------


def test_api_health_is_the_selectors_answer(api, agent, receiver):
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("down", status=502)
    services.delivery_send_test(agent=agent)

    response = api.get(f"/v1/agents/{agent.pk}/webhook/health")

    assert response.status == 200
    body = response.json()
    assert set(body) == HEALTH_KEYS
    assert body["state"] == "failing"
    assert body["since"] == body["failing_since"] and body["since"].endswith("Z")
    assert body["last_error"] == "The endpoint answered 502 Bad Gateway."
    assert (body["waiting_deliveries"], body["failed_deliveries"]) == (0, 1)


def test_api_recover(api, agent):
    webhook = webhook_factory(agent=agent, paused_at=timezone.now())
    delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)
    since = (timezone.now() - timedelta(hours=1)).isoformat().replace("+00:00", "Z")

    response = api.post(f"/v1/agents/{agent.pk}/webhook/deliveries/recover", json={"since": since})

    assert response.status == 200, response.body
    body = response.json()
    assert set(body) == {"object", "agent_id", "since", "recovered"}
    assert (body["object"], body["recovered"]) == ("webhook_recovery", 1)


@pytest.mark.parametrize(
    "body", [{}, {"since": 5}, {"since": "yesterday"}, {"since": "2999-01-01T00:00:00Z"}, []]
)
def test_api_recover_refuses_bad_bodies(api, agent, body):
    webhook_factory(agent=agent)
    response = api.post(f"/v1/agents/{agent.pk}/webhook/deliveries/recover", json=body)
    assert response.status == 400
    assert set(response.json()) == {"name", "message"}
