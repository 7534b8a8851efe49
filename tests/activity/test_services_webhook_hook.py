"""A run reaching an end state records its webhook outbox row in the same transaction."""

import pytest
from django.db import transaction

from apps.activity.models import Run
from apps.activity.records import records_parse
from apps.activity.services import activity_record
from apps.common.errors import BadRequest
from apps.webhooks.models import Webhook, WebhookDelivery
from tests.activity.factories import conversation_factory, run_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def webhook(agent):
    return Webhook.objects.create(
        agent=agent,
        enabled=True,
        events=["run.completed", "run.failed", "run.aborted"],
        url="https://hooks.example.com/agent",
        secret="whsec_dGVzdC1zZWNyZXQtdGVzdC1zZWNyZXQ=",
    )


def record(agent, *raw):
    return activity_record(agent=agent, records=records_parse(list(raw)))


@pytest.mark.parametrize("status", ["completed", "failed", "aborted"])
def test_run_moving_to_an_end_state_records_one_delivery(agent, webhook, status):
    run = run_factory(agent=agent, status="streaming")
    with transaction.atomic():
        record(agent, {"type": "run", "id": run.id, "status": status})
        # Inside the very transaction that ended the run, the outbox row exists.
        delivery = WebhookDelivery.objects.get(run_id=run.id)
    assert delivery.event_type == f"run.{status}"
    assert delivery.agent_id == agent.pk


def test_resending_the_ended_run_records_no_second_delivery(agent, webhook):
    run = run_factory(agent=agent, status="streaming")
    record(agent, {"type": "run", "id": run.id, "status": "completed"})
    record(agent, {"type": "run", "id": run.id, "status": "completed", "credits_charged": 2.0})
    record(agent, {"type": "run", "id": run.id, "status": "completed"})
    assert WebhookDelivery.objects.filter(run_id=run.id).count() == 1


def test_run_created_already_ended_records_a_delivery(agent, webhook):
    conversation = conversation_factory(agent=agent)
    record(agent, {"type": "run", "id": "run_x", "conversation_id": conversation.id,
                   "request_id": "r", "sdk_version": "5", "status": "failed",
                   "error_code": "provider_timeout"})  # fmt: skip
    assert WebhookDelivery.objects.get(run_id="run_x").event_type == "run.failed"


def test_streaming_run_records_no_delivery(agent, webhook):
    conversation = conversation_factory(agent=agent)
    record(agent, {"type": "run", "id": "run_s", "conversation_id": conversation.id,
                   "request_id": "r", "sdk_version": "5"})  # fmt: skip
    assert not WebhookDelivery.objects.exists()


def test_failed_transaction_keeps_neither_the_run_update_nor_the_delivery(agent, webhook):
    run = run_factory(agent=agent, status="streaming")
    with pytest.raises(BadRequest):
        record(
            agent,
            {"type": "run", "id": run.id, "status": "completed"},
            {"type": "message", "conversation_id": "conv_missing", "role": "user"},
        )
    assert Run.objects.get(id=run.id).status == "streaming"
    assert not WebhookDelivery.objects.exists()
