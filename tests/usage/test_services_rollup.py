"""The rollup stays exactly what a rebuild from the runs gives, however runs are recorded:
created, ended later, re-sent, moved to another day, concurrently."""

import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Sum

from apps.activity.models import Run
from apps.common.credits import credits_decimal
from apps.usage import rollup
from apps.usage.latency import BOUNDARIES
from apps.usage.models import DailyLatency, DailyUsage
from apps.usage.rollup import rollup_rebuild
from tests.activity.factories import run_factory
from tests.usage.helpers import conversation, record, record_run, rollup_state

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)


def assert_rollup_equals_rebuild():
    live = rollup_state()
    rollup_rebuild()
    assert rollup_state() == live


def test_a_recorded_run_lands_on_its_agents_utc_day(agent):
    record_run(agent, at=T0)
    row = DailyUsage.objects.get()
    assert (row.agent_id, row.workspace_id, row.day) == (agent.pk, agent.workspace_id, T0.date())
    assert (row.runs, row.completed_runs, row.failed_runs) == (1, 1, 0)
    assert (row.input_tokens, row.output_tokens, row.total_tokens) == (1000, 200, 1200)
    assert (row.cache_read_tokens, row.cache_write_tokens) == (100, 10)
    assert row.credits_charged == Decimal("1.25")
    assert DailyLatency.objects.get().runs == 1


def test_a_streaming_run_that_ends_later_moves_from_streaming_to_its_end_state(agent):
    run_id = record_run(
        agent, at=T0, status="streaming", input_tokens=..., output_tokens=..., total_tokens=...,
        cache_read_tokens=..., cache_write_tokens=..., credits_charged=...,
        total_turn_latency_ms=...,
    )  # fmt: skip
    row = DailyUsage.objects.get()
    assert (row.runs, row.streaming_runs, row.total_tokens, row.credits_charged) == (1, 1, 0, 0)
    assert not DailyLatency.objects.exists()

    record(agent, {"type": "run", "id": run_id, "status": "failed", "input_tokens": 7,
                   "total_tokens": 7, "credits_charged": 0.1, "total_turn_latency_ms": 950.5})  # fmt: skip

    row.refresh_from_db()
    assert (row.runs, row.streaming_runs, row.failed_runs) == (1, 0, 1)
    assert (row.input_tokens, row.total_tokens, row.credits_charged) == (7, 7, Decimal("0.1"))
    assert DailyLatency.objects.get().runs == 1
    assert_rollup_equals_rebuild()


def test_re_sending_a_run_changes_nothing_and_corrections_apply_the_difference(agent):
    run_id = record_run(agent, at=T0, id="run_same")
    before = rollup_state()
    record_run(agent, at=T0, id="run_same", conversation_id=Run.objects.get().conversation_id)
    assert rollup_state() == before

    record(agent, {"type": "run", "id": run_id, "credits_charged": 2.0, "output_tokens": 250,
                   "total_turn_latency_ms": 80000.0})  # fmt: skip
    row = DailyUsage.objects.get()
    assert (row.runs, row.output_tokens, row.credits_charged) == (1, 250, Decimal("2.0"))
    assert_rollup_equals_rebuild()


def test_a_run_whose_created_at_moves_leaves_its_old_day(agent):
    run_id = record_run(agent, at=T0)
    record_run(agent, at=T0 + timedelta(hours=1))  # the next UTC day keeps another run
    record(agent, {"type": "run", "id": run_id, "created_at": "2026-03-01T08:00:00Z"})
    days = dict(DailyUsage.objects.values_list("day", "runs"))
    assert days == {date(2026, 3, 1): 1, date(2026, 3, 11): 1}
    assert_rollup_equals_rebuild()


def test_a_mixed_history_matches_the_sums_over_its_runs(agent, sibling_agent):
    statuses = ["completed", "failed", "aborted", "streaming"]
    for i in range(40):
        owner = agent if i % 3 else sibling_agent
        record_run(
            owner,
            at=T0 - timedelta(hours=7 * i),
            status=statuses[i % 4],
            input_tokens=100 + i,
            output_tokens=None if i % 5 == 0 else 10 * i,
            total_tokens=100 + 11 * i,
            credits_charged=None if i % 7 == 0 else 0.1 * i + 0.003,
            total_turn_latency_ms=None if i % 4 == 3 else 37.5 * i,
        )
    runs = Run.objects.all()
    assert sum(DailyUsage.objects.values_list("runs", flat=True)) == runs.count()
    assert sum(DailyUsage.objects.values_list("output_tokens", flat=True)) == sum(
        run.output_tokens or 0 for run in runs
    )
    assert sum(DailyUsage.objects.values_list("credits_charged", flat=True)) == sum(
        credits_decimal(run.credits_charged) for run in runs
    )
    assert (
        sum(DailyLatency.objects.values_list("runs", flat=True))
        == runs.filter(total_turn_latency_ms__isnull=False).count()
    )
    assert_rollup_equals_rebuild()


def test_runs_written_around_the_recording_service_are_counted_by_the_rebuild(agent):
    run_factory(agent=agent, created_at=T0)
    assert not DailyUsage.objects.exists()
    assert rollup_rebuild(agent_ids=[agent.pk]) == 1
    assert DailyUsage.objects.get().runs == 1


def test_the_sql_and_python_rebuilds_agree_on_boundaries_and_long_decimals(agent, sibling_agent):
    awkward_latencies = [0.0, 0.999, 1.0, BOUNDARIES[1], BOUNDARIES[80], 2.0**24, 1e9, 2400.0]
    awkward_credits = [0.1 + 0.2, 1234567.123456789, 0.1234567895, 1e-10, 3.0, None, 7.77, 0.5]
    for i, (latency, credits) in enumerate(zip(awkward_latencies, awkward_credits, strict=True)):
        run_factory(
            agent=agent if i % 2 else sibling_agent,
            created_at=T0 - timedelta(days=i % 3),
            total_turn_latency_ms=latency,
            credits_charged=credits,
        )
    assert connection.vendor == "postgresql"
    rollup_rebuild()
    by_sql = rollup_state()
    DailyUsage.objects.all().delete()
    DailyLatency.objects.all().delete()
    rollup._rebuild_in_python(None)
    assert rollup_state() == by_sql


def test_the_usage_rebuild_command_refuses_unknown_agents(agent):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="No such Agent: agt_nope"):
        call_command("usage_rebuild", "--agent", "agt_nope")


def test_seed_demo_data_shows_up_in_the_rollup(db):
    from django.core.management import call_command

    call_command("seed_demo", "--json")
    assert sum(DailyUsage.objects.values_list("runs", flat=True)) == Run.objects.count() > 0
    assert_rollup_equals_rebuild()


@pytest.mark.django_db(transaction=True)
def test_concurrent_recordings_never_lose_an_increment(agent):
    conversations = [conversation(agent, at=T0) for _ in range(4)]
    errors = []

    def worker(index: int) -> None:
        try:
            for n in range(10):
                record_run(
                    agent,
                    at=T0,
                    id=f"run_c{index}_{n}",
                    conversation_id=conversations[index],
                    credits_charged=0.01,
                )
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # The four connections may have written different stripes of the one Agent-day.
    day = DailyUsage.objects.aggregate(Sum("runs"), Sum("credits_charged"), Sum("total_tokens"))
    assert tuple(day.values()) == (40, Decimal("0.40"), 48000)
    assert DailyLatency.objects.values("bucket").distinct().count() == 1
    assert DailyLatency.objects.aggregate(Sum("runs"))["runs__sum"] == 40
