"""The demo seed: realistic, varied, fast and idempotent."""

import time

import pytest

from apps.activity.demo import activity_seed_demo
from apps.activity.models import Conversation, EndUser, Message, Run

pytestmark = pytest.mark.django_db


def test_demo_fills_an_agent_with_varied_activity_once(agent):
    started = time.monotonic()
    summary = activity_seed_demo(agent=agent)
    elapsed = time.monotonic() - started
    assert elapsed < 10
    assert "users" in summary
    assert EndUser.objects.filter(agent=agent).count() >= 200
    assert Conversation.objects.filter(agent=agent).count() >= 300
    runs = Run.objects.filter(agent=agent)
    assert {"completed", "failed", "aborted"} <= set(runs.values_list("status", flat=True))
    assert runs.filter(status="failed").exclude(error_code=None).exists()
    assert runs.exclude(failed_tool_names=[]).exists()
    assert len(set(runs.values_list("model_id", flat=True))) >= 4
    part_types = {
        part["type"] for parts in Message.objects.values_list("parts", flat=True) for part in parts
    }
    assert {"text", "reasoning", "source-url", "file", "step-start"} <= part_types
    assert any(t.startswith("tool-") for t in part_types)
    counts = (EndUser.objects.count(), Run.objects.count(), Message.objects.count())

    assert "already present" in activity_seed_demo(agent=agent)
    assert (EndUser.objects.count(), Run.objects.count(), Message.objects.count()) == counts
