"""The outbox: a run reaching an end state records exactly one delivery, frozen at creation."""

import orjson
import pytest
from django.db import transaction

from apps.activity.rendering import run_to_dict
from apps.webhooks.models import DeliveryStatus, WebhookDelivery
from apps.webhooks.services import (
    deliveries_dispatch_due,
    delivery_record_for_run,
    webhook_update,
)
from tests.activity.factories import run_factory
from tests.webhooks.factories import webhook_factory
from tests.workers import broker_unreachable


@pytest.mark.smoke
@pytest.mark.django_db
def test_completed_run_records_one_pending_delivery_with_the_run_as_data(agent):
    webhook_factory(agent=agent)
    run = run_factory(agent=agent, status="completed")

    delivery = delivery_record_for_run(run=run)

    assert delivery is not None
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.event_type == "run.completed"
    assert delivery.run_id == run.id
    assert delivery.next_attempt_at is not None
    body = orjson.loads(delivery.body)
    assert set(body) == {"type", "timestamp", "data"}
    assert body["type"] == "run.completed"
    assert body["timestamp"].endswith("Z")
    assert body["data"] == run_to_dict(run)


@pytest.mark.django_db
def test_recording_twice_keeps_one_delivery_and_its_frozen_body(agent):
    webhook_factory(agent=agent)
    run = run_factory(agent=agent, status="failed")
    first = delivery_record_for_run(run=run)
    run.model_id = "changed-later"
    run.save()

    second = delivery_record_for_run(run=run)

    assert second.pk == first.pk
    assert WebhookDelivery.objects.filter(run_id=run.id).count() == 1
    assert orjson.loads(second.body)["data"]["model_id"] != "changed-later"


@pytest.mark.django_db
def test_unique_constraint_refuses_a_second_delivery_for_the_same_run_event(agent):
    from django.db import IntegrityError

    webhook = webhook_factory(agent=agent)
    run = run_factory(agent=agent, status="completed")
    delivery = delivery_record_for_run(run=run)
    with pytest.raises(IntegrityError), transaction.atomic():
        WebhookDelivery.objects.create(
            webhook=webhook,
            agent=agent,
            run_id=run.id,
            event_type="run.completed",
            body=delivery.body,
            status="pending",
            created_at=delivery.created_at,
            updated_at=delivery.updated_at,
        )


@pytest.mark.parametrize(
    ("status", "events", "enabled"),
    [
        ("streaming", ["run.completed"], True),
        ("completed", ["run.failed"], True),
        ("completed", ["run.completed"], False),
    ],
)
@pytest.mark.django_db
def test_no_delivery_when_not_an_end_state_not_subscribed_or_disabled(
    agent, status, events, enabled
):
    webhook_factory(agent=agent, events=events, enabled=enabled)
    run = run_factory(agent=agent, status=status)

    assert delivery_record_for_run(run=run) is None
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db
def test_no_delivery_for_an_agent_without_webhook(agent, sibling_agent):
    webhook_factory(agent=sibling_agent)
    run = run_factory(agent=agent, status="aborted")

    assert delivery_record_for_run(run=run) is None


@pytest.mark.django_db
def test_paused_webhook_records_a_waiting_delivery(agent):
    webhook_factory(agent=agent)
    webhook_update(agent=agent, paused=True)
    run = run_factory(agent=agent, status="aborted")

    delivery = delivery_record_for_run(run=run)

    assert delivery.status == DeliveryStatus.PAUSED
    assert delivery.next_attempt_at is None


@pytest.mark.django_db
def test_send_is_queued_only_after_commit(agent, django_capture_on_commit_callbacks):
    webhook_factory(agent=agent)
    run = run_factory(agent=agent, status="completed")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        delivery_record_for_run(run=run)
    assert len(callbacks) == 1


@pytest.mark.django_db
def test_broker_down_does_not_break_recording_and_the_sweeper_sends_it(
    agent, caplog, receiver, django_capture_on_commit_callbacks
):
    """With the broker unreachable the delivery stays pending for the sweeper: nothing lost."""
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("ok")
    run = run_factory(agent=agent, status="completed")
    with broker_unreachable(), django_capture_on_commit_callbacks(execute=True):
        delivery = delivery_record_for_run(run=run)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
    assert "the sweeper will send it" in caplog.text
    assert "Connection refused" in caplog.text
    assert deliveries_dispatch_due()["sent"] == 1
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert len(receiver.log) == 1
