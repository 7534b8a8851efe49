"""Scores expire with the activity they judge (apps.scores.retention, run by apps.retention)."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from apps.retention.services import retention_apply, retention_policy_set
from apps.scores.models import Score
from tests.activity.factories import conversation_factory, run_factory
from tests.scores.factories import score_factory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_an_expired_conversations_scores_go_and_live_ones_stay(agent, workspace):
    old_at = NOW - timedelta(days=40)
    old = conversation_factory(agent=agent, created_at=old_at, updated_at=old_at)
    old_run = run_factory(agent=agent, conversation=old, created_at=old_at, updated_at=old_at)
    alive = conversation_factory(agent=agent, created_at=old_at, updated_at=NOW)
    alive_run = run_factory(agent=agent, conversation=alive, created_at=NOW, updated_at=NOW)
    gone = score_factory(agent=agent, run=old_run, created_at=old_at, updated_at=old_at)
    kept_old = score_factory(agent=agent, run=alive_run, created_at=old_at, updated_at=old_at)
    kept_new = score_factory(agent=agent, run=old_run, created_at=NOW, updated_at=NOW)
    with time_machine.travel(NOW, tick=False):
        retention_policy_set(workspace=workspace, activity_days=30)
        assert retention_apply().finished
    left = set(Score.objects.values_list("id", flat=True))
    assert gone.id not in left
    assert {kept_old.id, kept_new.id} <= left  # a live conversation's, and one not yet expired
