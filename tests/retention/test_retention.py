"""Retention: a workspace's expired conversations go with their messages and runs, in bounded
batches, the usage rollup stays, other workspaces are untouched; superseded knowledge versions
are pruned. The clock is moved with time-machine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from apps.activity.models import Conversation, Message, Run
from apps.activity.retention import conversations_purge_batch
from apps.common.errors import BadRequest
from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion
from apps.knowledge.retention import versions_prune_superseded
from apps.retention.events import activity_purged
from apps.retention.services import retention_apply, retention_policy_set
from tests.activity.factories import conversation_factory, message_factory, run_factory
from tests.knowledge.conftest import make_file_document
from tests.usage.helpers import record_run, rollup_state

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
    assert event["counts"] == {"conversations": 2, "messages": 1, "runs": 2}


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
        sizes = []
        while batch := conversations_purge_batch(
            agent_ids=[agent.pk], before=before, batch_size=2, rows_per_statement=1
        ).ids:
            sizes.append(len(batch))
        assert sizes == [2, 2, 1]

    for days in range(3):
        record_run(agent, at=NOW - timedelta(days=100 + days))
    retention_policy_set(workspace=workspace, activity_days=90)
    with time_machine.travel(NOW, tick=False):
        assert not retention_apply(time_budget_seconds=0).finished  # out of time: run again
        assert Run.objects.count() == 3
        assert retention_apply().finished
    assert Run.objects.count() == 0


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
