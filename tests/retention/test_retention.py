"""Retention: a workspace's expired conversations go with their messages and runs, in bounded
batches, the usage rollup stays, other workspaces are untouched; superseded knowledge versions
are pruned. The clock is moved with time-machine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.activity.models import Conversation, Message, Run, RunStep
from apps.activity.retention import conversations_purge_batch
from apps.common.errors import BadRequest
from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion
from apps.knowledge.retention import versions_prune_superseded
from apps.retention.events import activity_purged
from apps.retention.services import retention_apply, retention_policy_set
from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from tests.activity.factories import conversation_factory, message_factory, run_factory
from tests.knowledge.conftest import make_file_document
from tests.usage.helpers import conversation, iso, record, record_run, rollup_state
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def purged_events():
    received = []

    def listen(sender, **kwargs):
        received.append(kwargs)

    activity_purged.connect(listen)
    yield received
    activity_purged.disconnect(listen)


def test_expired_conversations_go_with_their_messages_and_runs_and_usage_stays(
    agent, sibling_agent, other_agent, workspace, purged_events
):
    old = record_run(agent, at=NOW - timedelta(days=40))
    old_sibling = record_run(sibling_agent, at=NOW - timedelta(days=31))
    recent = record_run(agent, at=NOW - timedelta(days=5))
    elsewhere = record_run(other_agent, at=NOW - timedelta(days=400))  # kept forever
    old_conversation = Run.objects.get(id=old).conversation_id
    message_factory(
        conversation=Conversation.objects.get(agent=agent, id=old_conversation),
        created_at=NOW - timedelta(days=40),
    )
    # Started long ago but active last week: kept whole.
    alive = conversation_factory(
        agent=agent, created_at=NOW - timedelta(days=90), updated_at=NOW - timedelta(days=7)
    )
    run_factory(agent=agent, conversation=alive, created_at=NOW - timedelta(days=90))
    message_factory(conversation=alive, created_at=NOW - timedelta(days=90))
    retention_policy_set(workspace=workspace, activity_days=30)
    usage = rollup_state()

    with time_machine.travel(NOW, tick=False):
        result = retention_apply()

    assert result.finished
    assert set(Run.objects.values_list("id", flat=True)) == {
        recent,
        elsewhere,
        *Run.objects.filter(conversation_id=alive.id).values_list("id", flat=True),
    }
    assert old_sibling not in set(Run.objects.values_list("id", flat=True))
    assert not Conversation.objects.filter(agent=agent, id=old_conversation).exists()
    assert not Message.objects.filter(agent=agent, conversation_id=old_conversation).exists()
    assert Message.objects.filter(agent=agent, conversation_id=alive.id).count() == 1
    assert rollup_state() == usage, "the usage rollup lost history"
    [event] = purged_events
    assert event["workspace_id"] == workspace.pk
    assert event["before"] == NOW - timedelta(days=30)
    assert event["counts"] == {
        "conversations": 2,
        "messages": 1,
        "runs": 2,
        "webhook_deliveries": 0,
        "scores": 0,
        "unanswered_questions": 0,
    }


def test_forever_and_no_policy_keep_everything(agent, workspace, purged_events):
    old = record_run(agent, at=NOW - timedelta(days=3000))
    with time_machine.travel(NOW, tick=False):
        assert retention_apply().finished
        retention_policy_set(workspace=workspace, activity_days=None)
        assert retention_apply().finished
    assert Run.objects.filter(id=old).exists()
    assert purged_events == []


def test_the_default_applies_to_workspaces_without_a_policy(agent, settings):
    settings.RETENTION_DEFAULT_ACTIVITY_DAYS = 365
    old = record_run(agent, at=NOW - timedelta(days=366))
    kept = record_run(agent, at=NOW - timedelta(days=364))
    with time_machine.travel(NOW, tick=False):
        retention_apply()
    assert set(Run.objects.values_list("id", flat=True)) == {kept}
    assert old


def test_work_is_bounded_and_resumes(agent, workspace):
    for days in range(5):
        record_run(agent, at=NOW - timedelta(days=100 + days))
    with time_machine.travel(NOW, tick=False):
        before = NOW - timedelta(days=30)
        sizes, resume_at = [], None
        while True:
            batch = conversations_purge_batch(
                agent_id=agent.pk, before=before, batch_size=2, resume_at=resume_at
            )
            if not batch.ids:
                break
            sizes.append(len(batch.ids))
            resume_at = batch.resume_at
        assert sizes == [2, 2, 1]

    for days in range(3):
        record_run(agent, at=NOW - timedelta(days=100 + days))
    retention_policy_set(workspace=workspace, activity_days=90)
    with time_machine.travel(NOW, tick=False):
        assert not retention_apply(time_budget_seconds=0).finished  # out of time: run again
        assert Run.objects.count() == 3
        assert retention_apply().finished
    assert Run.objects.count() == 0


def _conversation_with(agent, *, runs: int, messages_per_run: int, at: datetime) -> str:
    conversation = conversation_factory(agent=agent, created_at=at, updated_at=at)
    for _ in range(runs):
        run = run_factory(agent=agent, conversation=conversation, created_at=at)
        for _ in range(messages_per_run):
            message_factory(conversation=conversation, run_id=run.id, created_at=at)
    return conversation.id


def test_a_batch_is_the_same_few_statements_whatever_its_rows(agent):
    """Set-based: the statements of a batch do not grow with its conversations, runs or
    messages (a DELETE per table, not per conversation or row)."""
    long_ago = NOW - timedelta(days=100)
    before = NOW - timedelta(days=30)
    _conversation_with(agent, runs=1, messages_per_run=1, at=long_ago)
    with CaptureQueriesContext(connection) as small:
        assert conversations_purge_batch(agent_id=agent.pk, before=before).runs == 1
    for _ in range(6):
        _conversation_with(agent, runs=4, messages_per_run=3, at=long_ago)
    with CaptureQueriesContext(connection) as large:
        batch = conversations_purge_batch(agent_id=agent.pk, before=before)
    assert (batch.conversations, batch.runs, batch.messages) == (6, 24, 72)
    # Six of its own, and six that keep the analytics rollup equal to the rows kept: the
    # runs' and their steps' contributions read, taken away, emptied rows removed, and the
    # Overview's per-day counts of those rows taken down, a count left at nothing removed.
    assert len(large.captured_queries) == len(small.captured_queries) <= 6 + 6
    assert not Run.objects.filter(agent=agent).exists()


def test_a_conversation_with_new_rows_keeps_all_its_history(agent, workspace):
    """A runtime may record a message or a run into an old conversation without touching the
    conversation: it is alive again, and nothing of it goes (no middle cut out, no new rows
    lost with it)."""
    long_ago = NOW - timedelta(days=60)
    revived_by_run = conversation(agent, at=long_ago)
    old_run = record_run(agent, at=long_ago, conversation_id=revived_by_run)
    new_run = record_run(agent, at=NOW - timedelta(days=1), conversation_id=revived_by_run)
    revived_by_message = _conversation_with(agent, runs=2, messages_per_run=1, at=long_ago)
    message_factory(
        conversation=Conversation.objects.get(agent=agent, id=revived_by_message),
        created_at=NOW - timedelta(hours=2),
    )
    expired = _conversation_with(agent, runs=1, messages_per_run=1, at=long_ago)
    assert Conversation.objects.get(agent=agent, id=revived_by_run).updated_at < long_ago + (
        timedelta(days=1)
    ), "recording a run left the conversation's own updated_at where it was"
    retention_policy_set(workspace=workspace, activity_days=30)

    with time_machine.travel(NOW, tick=False):
        result = retention_apply()

    assert result.purged[workspace.pk].counts() == {"conversations": 1, "messages": 1, "runs": 1}
    assert not Conversation.objects.filter(agent=agent, id=expired).exists()
    assert set(
        Run.objects.filter(agent=agent, conversation_id=revived_by_run).values_list("id", flat=True)
    ) == {old_run, new_run}
    assert Run.objects.filter(agent=agent, conversation_id=revived_by_message).count() == 2
    assert Message.objects.filter(agent=agent, conversation_id=revived_by_message).count() == 3


def test_run_steps_and_webhook_deliveries_go_with_their_run(agent, workspace, purged_events):
    webhook = webhook_factory(agent=agent)
    long_ago = NOW - timedelta(days=45)
    with time_machine.travel(long_ago, tick=False):
        old = record_run(agent, at=long_ago)
        record(agent, _step(old, long_ago))
        usage_notice = delivery_factory(webhook=webhook, event_type="usage.threshold_reached")
        usage_notice.run_id = None
        usage_notice.save(update_fields=["run_id"])
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        kept = record_run(agent, at=NOW - timedelta(days=2))
        record(agent, _step(kept, NOW - timedelta(days=2)))
    old_delivery = WebhookDelivery.objects.get(agent=agent, run_id=old)
    WebhookAttempt.objects.create(
        delivery=old_delivery, attempt=1, retry=0, kind="auto", status="succeeded",
        started_at=long_ago, finished_at=long_ago,
    )  # fmt: skip
    # A delivery as old as the expired one, of a run that stays (its conversation is alive).
    alive = conversation_factory(agent=agent, created_at=long_ago, updated_at=NOW)
    alive_run = run_factory(agent=agent, conversation=alive, created_at=long_ago)
    delivery_factory(webhook=webhook, run_id=alive_run.id, created_at=long_ago)
    retention_policy_set(workspace=workspace, activity_days=30)

    with time_machine.travel(NOW, tick=False):
        result = retention_apply()

    assert result.finished
    assert set(RunStep.objects.filter(agent=agent).values_list("run_id", flat=True)) == {kept}
    assert set(WebhookDelivery.objects.filter(agent=agent).values_list("run_id", flat=True)) == {
        kept,
        alive_run.id,
    }
    assert not WebhookAttempt.objects.filter(delivery_id=old_delivery.pk).exists()
    assert result.webhook_deliveries == {workspace.pk: 2}
    [event] = purged_events
    assert event["counts"] == {
        "conversations": 1,
        "messages": 0,
        "runs": 1,
        "webhook_deliveries": 2,
        "scores": 0,
        "unanswered_questions": 0,
    }


def _step(run_id: str, at: datetime) -> dict:
    return {
        "type": "step", "id": f"{run_id}_step", "run_id": run_id, "kind": "model",
        "name": "chat", "started_at": iso(at), "ended_at": iso(at + timedelta(seconds=1)),
    }  # fmt: skip


def test_only_the_allowed_periods(workspace):
    for days in (0, 7, 31, 366):
        with pytest.raises(BadRequest):
            retention_policy_set(workspace=workspace, activity_days=days)
    assert retention_policy_set(workspace=workspace, activity_days=365).activity_days == 365


def test_superseded_knowledge_versions_are_pruned_and_current_ones_kept(agent):
    document = make_file_document(agent, b"# Kettle\n\nDescale the kettle monthly.\n")
    current = document.current_version
    stale = KnowledgeContentVersion.objects.create(document=document, markdown="# Old", sha256="0")
    KnowledgeChunk.objects.create(
        version=stale, document=document, agent=agent, text="Old", position=0
    )

    assert versions_prune_superseded() == 1
    assert not KnowledgeContentVersion.objects.filter(pk=stale.pk).exists()
    assert not KnowledgeChunk.objects.filter(version_id=stale.pk).exists()
    assert KnowledgeContentVersion.objects.filter(pk=current.pk).exists()
    assert KnowledgeChunk.objects.filter(version=current).exists()
    assert versions_prune_superseded() == 0
