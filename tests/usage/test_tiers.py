"""The sealed latency tier of closed months (apps.usage.tiers): usage over any period answers
exactly what the daily rows give, sealed or not, and a late recording into a sealed month is
counted at once."""

import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connection

from apps.usage import tasks, tiers
from apps.usage.latency import percentiles
from apps.usage.models import (
    DailyLatency,
    DailyUsage,
    LatencyMonth,
    MonthlyLatency,
    WorkspaceDailyLatency,
)
from apps.usage.selectors import Period, usage_get
from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("the tier is built and read on PostgreSQL only")


def _today() -> date:
    with connection.cursor() as cursor:
        cursor.execute("SELECT (now() AT TIME ZONE 'UTC')::date")
        return cursor.fetchone()[0]


def _fill_rollup(agents, *, first: date, last: date, seed: int) -> None:
    """Daily rows as recording leaves them: per Agent and day, some runs in a few buckets."""
    rng = random.Random(seed)
    usage, latency = [], []
    day = first
    while day <= last:
        for agent in agents:
            if rng.random() < 0.15:
                continue  # an idle day
            buckets = {rng.randint(60, 120): rng.randint(1, 9) for _ in range(rng.randint(1, 6))}
            runs = sum(buckets.values())
            usage.append(DailyUsage(agent=agent, workspace_id=agent.workspace_id, day=day,
                                    runs=runs, completed_runs=runs, total_tokens=runs * 100))  # fmt: skip
            latency += [DailyLatency(agent=agent, workspace_id=agent.workspace_id, day=day,
                                     bucket=bucket, runs=n) for bucket, n in buckets.items()]  # fmt: skip
        day += timedelta(days=1)
    DailyUsage.objects.bulk_create(usage)
    DailyLatency.objects.bulk_create(latency)


def _figures(usage) -> dict:
    return {
        "totals": (usage.totals.counters, usage.totals.latency()),
        "agents": [(agent.pk, f.counters, f.latency()) for agent, f in usage.agents],
        "series": [(first, last, f.counters, f.latency()) for first, last, f in usage.series],
        "per_agent_day": {key: f.latency() for key, f in usage.per_agent_day.items()},
    }


def _oracle_latency(workspace, period: Period, agent) -> dict:
    """Percentiles straight from the DailyLatency rows, in Python: what any answer must be."""
    groups: dict = defaultdict(lambda: defaultdict(int))
    rows = DailyLatency.objects.filter(
        workspace=workspace, day__gte=period.start, day__lte=period.end
    )
    if agent is not None:
        rows = rows.filter(agent=agent)
    series_of = {}
    for first, last in period.buckets():
        for offset in range((last - first).days + 1):
            series_of[first + timedelta(days=offset)] = first
    for row in rows:
        for key in ("total", ("agent", row.agent_id), ("series", series_of[row.day])):
            groups[key][row.bucket] += row.runs
    return {key: tuple(percentiles(histogram, (50, 95))) for key, histogram in groups.items()}


def _random_period(rng, first: date, last: date) -> Period:
    start = first + timedelta(days=rng.randint(0, (last - first).days))
    end = min(last, start + timedelta(days=rng.randint(0, 365)))
    return Period(start=start, end=end, granularity=rng.choice(("day", "week")))


def test_sealed_and_unsealed_months_give_the_same_answers_for_random_periods(
    workspace, agent, sibling_agent
):
    today = _today()
    first, last = today - timedelta(days=420), today
    _fill_rollup([agent, sibling_agent], first=first, last=last, seed=27)
    rng = random.Random(5)
    cases = [
        (_random_period(rng, first, last), rng.choice((None, agent)), rng.random() < 0.3)
        for _ in range(25)
    ]
    cases.append((Period(start=today - timedelta(days=365), end=today), None, False))

    def answers():
        return [
            _figures(usage_get(workspace=workspace, period=p, agent=a, per_agent_day=per_day))
            for p, a, per_day in cases
        ]

    before = answers()
    result = tiers.months_seal()
    assert result.finished and result.sealed >= 12
    assert MonthlyLatency.objects.exists() and WorkspaceDailyLatency.objects.exists()
    assert answers() == before

    for (period, only, _per_day), figures in zip(cases, before, strict=True):
        oracle = _oracle_latency(workspace, period, only)
        assert figures["totals"][1] == oracle.get("total", (None, None))
        for agent_id, _counters, latency in figures["agents"]:
            assert latency == oracle.get(("agent", agent_id), (None, None))
        for series_first, _last, _counters, latency in figures["series"]:
            assert latency == oracle.get(("series", series_first), (None, None))


def test_a_year_by_day_reads_the_tier_of_sealed_months(workspace, agent):
    """The tier is what the answer is read from: a sealed month's tier rows, changed behind the
    trigger's back, change the answer (they never are, outside this test)."""
    today = _today()
    _fill_rollup([agent], first=today - timedelta(days=200), last=today, seed=3)
    tiers.months_seal()
    period = Period(start=today - timedelta(days=365), end=today)
    honest = usage_get(workspace=workspace, period=period).totals.latency()
    MonthlyLatency.objects.filter(workspace=workspace, bucket__lt=90).delete()
    assert usage_get(workspace=workspace, period=period).totals.latency() != honest


def test_a_late_run_in_a_sealed_month_counts_at_once_and_the_next_seal_catches_up(workspace, agent):
    today = _today()
    month = (today.replace(day=1) - timedelta(days=40)).replace(day=1)
    at = datetime(month.year, month.month, 10, 12, tzinfo=UTC)
    for latency in (1000.0, 1100.0, 1200.0):
        record_run(agent, at=at, total_turn_latency_ms=latency)
    assert tiers.months_seal().sealed == 1
    seal = LatencyMonth.objects.get(workspace_id=workspace.pk, month=month)
    assert seal.built_version == seal.version
    period = Period(start=month, end=today)
    assert usage_get(workspace=workspace, period=period).totals.p95 == pytest.approx(1200, rel=0.05)

    # Recorded through the ingest path, days after its month closed: the trigger moves the
    # version, so the next answer reads the daily rows.
    for _ in range(3):
        record_run(agent, at=at + timedelta(days=5), total_turn_latency_ms=90_000.0)
    seal.refresh_from_db()
    assert seal.version > seal.built_version
    usage = usage_get(workspace=workspace, period=period)
    assert usage.totals.counters["runs"] == 6
    assert usage.totals.p95 == pytest.approx(90_000, rel=0.05)
    assert usage.totals.latency() == tuple(
        percentiles(
            {row.bucket: row.runs for row in DailyLatency.objects.filter(agent=agent)}, (50, 95)
        )
    )
    assert tasks.seal_months() == "done"
    seal.refresh_from_db()
    assert seal.built_version == seal.version
    assert usage_get(workspace=workspace, period=period).totals.latency() == usage.totals.latency()


def test_recording_today_never_touches_the_seals(workspace, agent):
    record_run(agent, at=datetime.now(UTC))
    record_run(agent, at=datetime.now(UTC) - timedelta(days=1))
    assert not LatencyMonth.objects.exists()
    assert tiers.months_seal().sealed == 0


def test_beat_seals_months_hourly():
    assert django_settings.CELERY_BEAT_SCHEDULE["usage-seal-months"] == {
        "task": "usage.seal_months",
        "schedule": 3600.0,
    }
