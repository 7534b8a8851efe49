"""Sending deliveries to a real local receiver: signatures, attempts, the retry schedule,
pausing after repeated failures and resuming, manual retries and test sends."""

import time
from datetime import timedelta

import orjson
import pytest
import time_machine
from django.utils import timezone
from standardwebhooks.webhooks import Webhook as StandardWebhook
from werkzeug import Response

from apps.common.errors import Conflict
from apps.webhooks.models import Webhook, WebhookDelivery
from apps.webhooks.services import (
    attempts,
    deliveries_dispatch_due,
    delivery_record_for_run,
    delivery_retry,
    delivery_send_due,
    delivery_send_test,
    sending,
    webhook_secret_rotate,
    webhook_update,
)
from tests.activity.factories import run_factory
from tests.webhooks.conftest import received
from tests.webhooks.factories import delivery_factory, webhook_factory
from tests.workers import wait_for


def _configure(agent, receiver, path="/hook", **fields):
    return webhook_factory(agent=agent, url=receiver.url_for(path), **fields)


@pytest.mark.django_db
def test_delivery_is_signed_so_standardwebhooks_verifies_it(agent, receiver):
    webhook = _configure(agent, receiver)
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    run = run_factory(agent=agent, status="completed")
    delivery = delivery_record_for_run(run=run)

    assert delivery_send_due(delivery_id=delivery.pk) == "succeeded"

    [request] = received(receiver)
    payload = StandardWebhook(webhook.secret).verify(request.get_data(), dict(request.headers))
    assert payload["type"] == "run.completed"
    assert payload["data"]["id"] == run.id
    assert request.headers["webhook-id"] == delivery.pk
    assert request.headers["Content-Type"] == "application/json"
    assert request.get_data().decode() == delivery.body


@pytest.mark.django_db
def test_a_wrong_secret_does_not_verify(agent, receiver):
    from standardwebhooks.webhooks import WebhookVerificationError

    from apps.webhooks.signing import secret_generate

    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    delivery_send_due(delivery_id=delivery.pk)

    [request] = received(receiver)
    with pytest.raises(WebhookVerificationError):
        StandardWebhook(secret_generate()).verify(request.get_data(), dict(request.headers))


@pytest.mark.django_db
def test_success_records_one_attempt_and_clears_the_schedule(agent, receiver):
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("thanks", status=204)
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))

    delivery_send_due(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert delivery.attempts == 1
    assert delivery.retry_count == 0
    assert delivery.response_status == 204
    assert delivery.error_message is None
    assert delivery.next_attempt_at is None
    [attempt] = delivery.attempt_rows.all()
    assert (attempt.attempt, attempt.retry, attempt.status) == (1, 0, "succeeded")
    assert attempt.started_at <= attempt.finished_at


@pytest.mark.django_db
def test_non_2xx_is_a_failed_attempt_scheduled_for_retry_in_about_5_seconds(agent, receiver):
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("boom", status=500)
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="failed"))
    before = timezone.now()

    delivery_send_due(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    assert delivery.status == "pending"
    assert delivery.response_status == 500
    assert delivery.error_message == "The endpoint answered 500 Internal Server Error."
    assert delivery.retry_count == 1
    delay = (delivery.next_attempt_at - before).total_seconds()
    assert 4.4 <= delay <= 6
    [attempt] = delivery.attempt_rows.all()
    assert (attempt.status, attempt.response_status, attempt.response_body) == (
        "failed",
        500,
        "boom",
    )


@pytest.mark.django_db
def test_attempt_keeps_the_answers_headers_bounded(agent, receiver):
    """Svix shows an attempt's response headers: kept in the order sent, at most HEADERS_KEPT
    of them, each value cut at HEADER_VALUE_MAX, so an endpoint cannot grow our rows."""
    from apps.common.http import HEADER_VALUE_MAX, HEADERS_KEPT

    _configure(agent, receiver)
    headers = [("Retry-After", "30"), ("X-Long", "v" * 5000)]
    headers += [(f"X-Extra-{n}", str(n)) for n in range(80)]
    receiver.expect_request("/hook").respond_with_response(
        Response("busy", status=503, headers=headers)
    )
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="failed"))

    delivery_send_due(delivery_id=delivery.pk)

    [attempt] = WebhookDelivery.objects.get(pk=delivery.pk).attempt_rows.all()
    assert attempt.response_body == "busy"
    pairs = [tuple(pair) for pair in attempt.response_headers]
    assert len(pairs) == HEADERS_KEPT
    assert ("Retry-After", "30") in pairs
    assert ("X-Long", "v" * HEADER_VALUE_MAX) in pairs
    assert all(len(value) <= HEADER_VALUE_MAX for _name, value in pairs)


@pytest.mark.django_db
def test_slow_endpoint_is_a_timeout_attempt(agent, receiver, settings):
    settings.WEBHOOK_READ_TIMEOUT = 0.3
    _configure(agent, receiver)

    def slow(request):
        time.sleep(1)
        return Response("late")

    receiver.expect_request("/hook").respond_with_handler(slow)
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))

    delivery_send_due(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    [attempt] = delivery.attempt_rows.all()
    assert attempt.status == "timeout"
    assert attempt.response_status is None
    assert "Timed out" in attempt.error_message
    assert delivery.status == "pending"
    # The receiver finishes the late answer after we gave up; wait for it here, or it would
    # land in the next test's request log (the server outlives each test).
    wait_for(lambda: receiver.log, timeout=5, message="the slow handler never finished")


@pytest.mark.django_db
def test_connection_refused_is_an_error_attempt(agent, settings):
    import socket

    settings.NETGUARD_ALLOW_LOOPBACK = True
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    webhook_factory(agent=agent, url=f"http://127.0.0.1:{port}/hook")
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))

    delivery_send_due(delivery_id=delivery.pk)

    [attempt] = WebhookDelivery.objects.get(pk=delivery.pk).attempt_rows.all()
    assert attempt.status == "error"
    assert attempt.error_message == "Connection refused."


@pytest.mark.django_db
def test_loopback_target_is_refused_by_default_as_an_error_attempt(agent, httpserver, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = False
    webhook_factory(agent=agent, url=httpserver.url_for("/hook"))
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))

    delivery_send_due(delivery_id=delivery.pk)

    [attempt] = WebhookDelivery.objects.get(pk=delivery.pk).attempt_rows.all()
    assert attempt.status == "error"
    assert "not public" in attempt.error_message
    assert received(httpserver) == []


@pytest.mark.django_db
def test_schedule_retries_six_times_with_backoff_then_fails_for_good(agent, receiver):
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("down", status=503)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
        delivery_send_due(delivery_id=delivery.pk)
        delays = []
        for _ in range(6):
            delivery.refresh_from_db()
            assert delivery.status == "pending"
            due_in = delivery.next_attempt_at - timezone.now()
            delays.append(due_in.total_seconds())
            # Not due a moment before its time...
            clock.shift(due_in - timedelta(milliseconds=10))
            assert deliveries_dispatch_due()["sent"] == 0
            clock.shift(timedelta(milliseconds=20))
            assert deliveries_dispatch_due()["sent"] == 1

    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert delivery.next_attempt_at is None
    assert delivery.attempts == 7
    assert delivery.retry_count == 6
    assert [a.retry for a in delivery.attempt_rows.all()] == [0, 1, 2, 3, 4, 5, 6]
    for nominal, actual in zip(attempts.retry_schedule(), delays, strict=True):
        assert nominal * 0.89 <= actual <= nominal * 1.11
    assert len(received(receiver)) == 7


@pytest.mark.django_db
def test_consecutive_failed_deliveries_pause_the_webhook_and_new_events_wait(
    agent, receiver, settings
):
    settings.WEBHOOK_RETRY_SCHEDULE = ()
    settings.WEBHOOK_PAUSE_AFTER_FAILURES = 3
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("no", status=410)
    for _ in range(3):
        delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
        delivery_send_due(delivery_id=delivery.pk)
        assert WebhookDelivery.objects.get(pk=delivery.pk).status == "failed"

    webhook = Webhook.objects.get(agent=agent)
    assert webhook.paused_at is not None
    waiting = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    assert waiting.status == "paused"
    assert deliveries_dispatch_due()["sent"] == 0
    assert len(received(receiver)) == 3

    receiver.clear()
    receiver.expect_request("/hook").respond_with_data("ok")
    webhook_update(agent=agent, paused=False)
    waiting.refresh_from_db()
    assert waiting.status == "pending"
    assert deliveries_dispatch_due()["sent"] == 1
    waiting.refresh_from_db()
    assert waiting.status == "succeeded"
    webhook.refresh_from_db()
    assert (webhook.paused_at, webhook.consecutive_failures) == (None, 0)


@pytest.mark.django_db
def test_a_success_resets_the_run_of_failures(agent, receiver, settings):
    settings.WEBHOOK_RETRY_SCHEDULE = ()
    settings.WEBHOOK_PAUSE_AFTER_FAILURES = 2
    _configure(agent, receiver)
    receiver.expect_ordered_request("/hook").respond_with_data("no", status=500)
    receiver.expect_ordered_request("/hook").respond_with_data("ok")
    receiver.expect_ordered_request("/hook").respond_with_data("no", status=500)
    for _ in range(3):
        delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
        delivery_send_due(delivery_id=delivery.pk)

    webhook = Webhook.objects.get(agent=agent)
    assert webhook.paused_at is None
    assert webhook.consecutive_failures == 1


@pytest.mark.django_db
def test_pending_deliveries_of_a_disabled_webhook_wait_and_resume_on_enable(agent, receiver):
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    webhook_update(agent=agent, enabled=False)

    assert deliveries_dispatch_due() == {"reclaimed": 0, "held": 1, "sent": 0}
    delivery.refresh_from_db()
    assert delivery.status == "paused"

    webhook_update(agent=agent, enabled=True)
    assert deliveries_dispatch_due()["sent"] == 1
    assert len(received(receiver)) == 1


@pytest.mark.django_db
def test_manual_retry_of_a_failed_delivery_sends_now_and_appends_an_attempt(agent, receiver):
    webhook = _configure(agent, receiver)
    delivery = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)
    receiver.expect_request("/hook").respond_with_data("ok")

    result = delivery_retry(agent=agent, delivery_id=delivery.pk)

    assert result.status == "succeeded"
    assert result.attempts == 1
    [attempt] = result.attempt_rows.all()
    assert attempt.status == "succeeded"
    assert attempt.kind == "manual"


@pytest.mark.django_db
def test_failed_manual_retry_keeps_the_automatic_schedule(agent, receiver):
    webhook = _configure(agent, receiver)
    due = timezone.now() + timedelta(minutes=30)
    delivery = delivery_factory(
        webhook=webhook, status="pending", next_attempt_at=due, retry_count=2
    )
    receiver.expect_request("/hook").respond_with_data("no", status=502)

    result = delivery_retry(agent=agent, delivery_id=delivery.pk)

    assert result.status == "pending"
    assert result.next_attempt_at == due
    assert result.retry_count == 2
    assert [a.retry for a in result.attempt_rows.all()] == [2]


@pytest.mark.django_db
def test_failed_manual_retry_of_a_succeeded_delivery_does_not_schedule_retries(agent, receiver):
    webhook = _configure(agent, receiver)
    delivery = delivery_factory(webhook=webhook, status="succeeded", next_attempt_at=None)
    receiver.expect_request("/hook").respond_with_data("no", status=500)

    result = delivery_retry(agent=agent, delivery_id=delivery.pk)

    assert result.status == "failed"
    assert result.next_attempt_at is None


@pytest.mark.django_db
def test_manual_retry_of_a_delivery_being_sent_is_a_conflict(agent, receiver):
    webhook = _configure(agent, receiver)
    delivery = delivery_factory(webhook=webhook, status="sending", claim_token="x")

    with pytest.raises(Conflict):
        delivery_retry(agent=agent, delivery_id=delivery.pk)
    assert received(receiver) == []


@pytest.mark.django_db
def test_test_send_is_marked_test_and_verifies(agent, receiver):
    webhook = _configure(agent, receiver, events=["run.failed"])
    receiver.expect_request("/hook").respond_with_data("ok")

    delivery = delivery_send_test(agent=agent)

    assert delivery.is_test is True
    assert delivery.event_type == "run.failed"
    assert delivery.status == "succeeded"
    [request] = received(receiver)
    payload = StandardWebhook(webhook.secret).verify(request.get_data(), dict(request.headers))
    assert payload["data"]["status"] == "failed"
    assert payload["data"]["id"] == delivery.run_id


@pytest.mark.django_db
def test_failed_test_send_is_not_retried_and_does_not_count_towards_pausing(
    agent, receiver, settings
):
    settings.WEBHOOK_PAUSE_AFTER_FAILURES = 1
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("no", status=500)

    delivery = delivery_send_test(agent=agent, event_type="run.aborted")

    assert (delivery.status, delivery.next_attempt_at) == ("failed", None)
    assert Webhook.objects.get(agent=agent).paused_at is None


@pytest.mark.django_db
def test_after_rotation_both_secrets_verify_for_a_grace_period(agent, receiver):
    webhook = _configure(agent, receiver)
    old_secret = webhook.secret
    _, new_secret = webhook_secret_rotate(agent=agent)
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery_send_test(agent=agent)

    [request] = received(receiver)
    for secret in (old_secret, new_secret):
        StandardWebhook(secret).verify(request.get_data(), dict(request.headers))
    assert new_secret != old_secret and new_secret.startswith("whsec_")


@pytest.mark.django_db
def test_expired_claim_is_reclaimed_with_one_interrupted_attempt_then_sent(agent, receiver):
    """A worker killed mid-send leaves the delivery `sending`; the sweeper records that attempt
    once, and the late worker (if it ever comes back) cannot record a second."""
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    claim = sending._claim_due(now=timezone.now(), delivery_id=delivery.pk)
    assert claim is not None

    with time_machine.travel(timezone.now() + timedelta(minutes=2), tick=False) as clock:
        result = deliveries_dispatch_due()
        assert result["reclaimed"] == 1
        delivery.refresh_from_db()
        assert delivery.status == "pending"
        assert [a.status for a in delivery.attempt_rows.all()] == ["error"]
        clock.shift(timedelta(seconds=10))
        assert deliveries_dispatch_due()["sent"] == 1
        # The original worker returns and tries to record its attempt with its old claim.
        assert sending._attempt(claim) is None

    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert [a.attempt for a in delivery.attempt_rows.all()] == [1, 2]


@pytest.mark.django_db
def test_deliver_task_for_a_delivery_already_handled_is_obsolete(agent, receiver):
    _configure(agent, receiver)
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    assert delivery_send_due(delivery_id=delivery.pk) == "succeeded"

    assert delivery_send_due(delivery_id=delivery.pk) == "obsolete"
    assert len(received(receiver)) == 1


@pytest.mark.django_db
def test_body_is_the_same_bytes_on_every_attempt(agent, receiver):
    _configure(agent, receiver)
    receiver.expect_ordered_request("/hook").respond_with_data("no", status=500)
    receiver.expect_ordered_request("/hook").respond_with_data("ok")
    delivery = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    delivery_send_due(delivery_id=delivery.pk)
    delivery_retry(agent=agent, delivery_id=delivery.pk)

    first, second = received(receiver)
    assert first.get_data() == second.get_data()
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert orjson.loads(first.get_data())["data"]["id"] == delivery.run_id


@pytest.mark.django_db
def test_test_send_sample_has_exactly_the_shape_of_a_real_run_event(agent, receiver):
    _configure(agent, receiver, events=["run.completed"])
    receiver.expect_request("/hook").respond_with_data("ok")
    real = delivery_record_for_run(run=run_factory(agent=agent, status="completed"))
    sample = delivery_send_test(agent=agent, event_type="run.aborted")  # no aborted run exists

    real_data = orjson.loads(real.body)["data"]
    sample_data = orjson.loads(sample.body)["data"]
    assert list(sample_data) == list(real_data)
    both_set = [key for key in real_data if None not in (real_data[key], sample_data[key])]
    assert [type(sample_data[key]) for key in both_set] == [
        type(real_data[key]) for key in both_set
    ]
    assert sample_data["status"] == "aborted"
