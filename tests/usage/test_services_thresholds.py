"""The monthly credit limit: owners set it; 80 % and 100 % are announced once per month as
`usage.threshold_reached` webhook deliveries (outbox rows, in the recording transaction)."""

from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pytest
from django.core.exceptions import PermissionDenied

from apps.usage.models import ThresholdReached
from apps.usage.services import credit_limit_parse, credit_limit_set
from apps.webhooks.models import DeliveryStatus, WebhookDelivery
from apps.workspaces.models import Agent
from tests.usage.helpers import record_run
from tests.webhooks.factories import webhook_factory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)
EVENT = "usage.threshold_reached"


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(NOW, tick=False)


@pytest.fixture
def subscribed(agent):
    return webhook_factory(agent=agent, events=["run.completed", EVENT])


def usage_deliveries():
    return list(WebhookDelivery.objects.filter(event_type=EVENT).order_by("created_at", "id"))


def test_crossing_80_then_100_percent_announces_each_once(agent, workspace, owner, subscribed):
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(10))
    record_run(agent, at=NOW, credits_charged=7.9)
    assert usage_deliveries() == []

    record_run(agent, at=NOW, credits_charged=0.1)  # 8.0 of 10: 80 %
    record_run(agent, at=NOW, credits_charged=0.5)  # still above 80 %: not again
    [first] = usage_deliveries()
    assert first.run_id is None and first.agent_id == agent.pk
    assert first.status == DeliveryStatus.PENDING and not first.is_test
    body = orjson.loads(first.body)
    assert body["type"] == EVENT
    assert body["data"] == {
        "object": "usage_threshold",
        "workspace_id": workspace.pk,
        "month": "2026-05",
        "threshold_percent": 80,
        "monthly_credit_limit": 10.0,
        "credits_used": 8.0,
        "percent_used": 80.0,
    }

    record_run(agent, at=NOW, credits_charged=2.0)  # 10.5 of 10
    record_run(agent, at=NOW, credits_charged=2.0)
    percents = [orjson.loads(d.body)["data"]["threshold_percent"] for d in usage_deliveries()]
    assert sorted(percents) == [80, 100]
    assert ThresholdReached.objects.count() == 2


def test_one_run_past_both_thresholds_announces_both(agent, workspace, owner, subscribed):
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(5))
    record_run(agent, at=NOW, credits_charged=6.0)
    percents = [orjson.loads(d.body)["data"]["threshold_percent"] for d in usage_deliveries()]
    assert sorted(percents) == [80, 100]


def test_every_subscribed_active_agent_of_the_workspace_gets_one(
    agent, sibling_agent, other_agent, workspace, owner, subscribed
):
    webhook_factory(agent=sibling_agent, events=[EVENT])
    archived = Agent.objects.create(workspace=workspace, name="Old", status="archived")
    webhook_factory(agent=archived, events=[EVENT])
    webhook_factory(agent=other_agent, events=[EVENT])
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(1))
    record_run(sibling_agent, at=NOW, credits_charged=0.9)
    assert sorted(d.agent_id for d in usage_deliveries()) == sorted([agent.pk, sibling_agent.pk])


def test_unsubscribed_disabled_or_paused_webhooks(agent, sibling_agent, workspace, owner):
    webhook_factory(agent=agent, events=["run.completed"])  # not subscribed
    webhook_factory(agent=sibling_agent, events=[EVENT], paused_at=NOW)  # waits as paused
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(1))
    record_run(agent, at=NOW, credits_charged=0.85)
    [held] = usage_deliveries()
    assert held.agent_id == sibling_agent.pk and held.status == DeliveryStatus.PAUSED


def test_no_limit_no_announcement_and_past_months_never_announce(
    agent, workspace, owner, subscribed
):
    record_run(agent, at=NOW, credits_charged=500.0)
    assert usage_deliveries() == []
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(1000))
    record_run(agent, at=datetime(2026, 4, 30, 23, 0, tzinfo=UTC), credits_charged=900.0)
    assert usage_deliveries() == []  # April's credits are not May's


def test_a_limit_lowered_below_this_months_usage_announces_now(agent, workspace, owner, subscribed):
    record_run(agent, at=NOW, credits_charged=9.0)
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(10))
    assert [orjson.loads(d.body)["data"]["threshold_percent"] for d in usage_deliveries()] == [80]


def test_raising_the_limit_re_arms_thresholds_no_longer_reached(
    agent, workspace, owner, subscribed
):
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(10))
    record_run(agent, at=NOW, credits_charged=8.5)
    credit_limit_set(workspace=workspace, user=owner, limit=Decimal(100))
    assert not ThresholdReached.objects.exists()
    record_run(agent, at=NOW, credits_charged=72.0)  # 80.5 of 100
    assert len(usage_deliveries()) == 2


def test_only_owners_set_the_limit(workspace, member):
    with pytest.raises(PermissionDenied):
        credit_limit_set(workspace=workspace, user=member, limit=Decimal(10))
    workspace.refresh_from_db()
    assert workspace.monthly_credit_limit is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", None), ("  ", None), ("1000", Decimal("1000.00")), ("1,500.456", Decimal("1500.46"))],
)
def test_credit_limit_parse_accepts(raw, expected):
    assert credit_limit_parse(raw) == expected


@pytest.mark.parametrize("raw", ["0", "-5", "abc", "NaN", "Infinity", "1e30"])
def test_credit_limit_parse_refuses(raw):
    from apps.common.errors import BadRequest

    with pytest.raises(BadRequest, match="monthly_credit_limit"):
        credit_limit_parse(raw)
