"""A real `celery beat` and a real worker group unanswered questions: beat sends
`knowledge.gaps_sweep` on its production schedule entry (the interval shortened through the
setting production reads), the worker runs it with the packaged embedding model, and new
questions recorded later join the groups already made, never recomputed."""

from __future__ import annotations

import pytest

from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapOccurrence
from tests.knowledge.gap_helpers import ask
from tests.workers import BeatProcess, WorkerProcess, purge_test_queues, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_beat_schedules_the_sweep():
    from django.conf import settings

    entry = settings.CELERY_BEAT_SCHEDULE["knowledge-gaps-sweep"]
    assert entry == {"task": "knowledge.gaps_sweep", "schedule": 60.0}


def test_a_real_beat_and_worker_group_questions_as_they_come(make_api, agent, settings, tmp_path):
    if not settings.REDIS_URL:
        pytest.skip("beat and the worker need Redis (REDIS_URL)")
    from config.celery import app

    app.control.purge()
    purge_test_queues()
    env = {"KNOWLEDGE_GAPS_INTERVAL_SECONDS": "1", "KNOWLEDGE_GAPS_SETTLE_SECONDS": "0"}
    worker = WorkerProcess(**env).start()
    beat = BeatProcess(tmp_path, **env).start()
    try:
        writer = make_api(scopes=["activity:write"])
        ask(writer, "run_0", "How do I cancel my subscription?")
        ask(writer, "run_1", "What time does your store open?")
        ask(writer, "run_2", "Where can I end my membership?")
        # This Agent's questions: counted over the whole table, rows left by an earlier test
        # once met the condition before this test's sweep had run (and no group was found).
        asked = KnowledgeGapOccurrence.objects.filter(agent=agent)
        wait_for(
            lambda: not asked.filter(gap__isnull=True).exists() and asked.count() == 3,
            timeout=90,
            message="beat's sweep never grouped the questions",
        )
        groups = {
            gap.representative: gap.question_count
            for gap in KnowledgeGap.objects.filter(agent=agent)
        }
        assert sorted(groups.values()) == [1, 2]
        cancel = KnowledgeGap.objects.get(agent=agent, question_count=2)

        ask(writer, "run_3", "cancel account subscription")
        wait_for(
            lambda: KnowledgeGap.objects.get(pk=cancel.pk).question_count == 3,
            timeout=60,
            message="a later question did not join its group",
        )
        assert KnowledgeGap.objects.filter(agent=agent).count() == 2
    finally:
        beat.stop()
        worker.stop()
