"""The Overview's charts past 92 days (apps.activity.overview_charts): a mark per ISO week, the
first and last clipped to the period, each week's figures those of the runs of that week, and
each mark opening exactly those runs; up to 92 days a mark per day, as before."""

import re
from datetime import UTC, date, datetime, timedelta
from html import unescape

import pytest

from apps.activity.models import Run
from apps.activity.overview_charts import DAILY_UP_TO, bucket_figures, buckets_of
from apps.activity.overview_rollup import overview_of_rollups
from apps.activity.overview_runs import overview_of_runs
from apps.activity.overview_types import OverviewScope
from apps.common.latency import percentiles
from tests.activity.test_overview_rollup import NOW, _record_months

pytestmark = pytest.mark.django_db

FIRST, LAST = date(2025, 12, 31), NOW.date()  # a Wednesday to a Wednesday: 141 days


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(NOW, tick=False)


def _days(first: date, count: int) -> list[date]:
    return [first + timedelta(days=i) for i in range(count)]


def test_a_bucket_per_day_up_to_92_days_then_per_iso_week_clipped_to_the_period():
    assert [b.days for b in buckets_of(_days(FIRST, DAILY_UP_TO))] == [1] * DAILY_UP_TO
    days = _days(FIRST, 141)
    buckets = buckets_of(days)
    # Wednesday Dec 31 to Sunday Jan 4, then whole weeks, the last Monday to Wednesday.
    assert (buckets[0].first, buckets[0].last) == (date(2025, 12, 31), date(2026, 1, 4))
    assert all(b.first.weekday() == 0 and b.days == 7 for b in buckets[1:-1])
    assert (buckets[-1].first, buckets[-1].last) == (date(2026, 5, 18), date(2026, 5, 20))
    # Every day in exactly one bucket, in order.
    assert [day for b in buckets for day in days[b.start : b.stop]] == days
    assert buckets[0].name == "2025-12-31 – 2026-01-04"


def test_each_weeks_figures_are_those_of_the_runs_of_that_week(agent):
    _record_months(agent)
    overview = overview_of_rollups(agent.pk, OverviewScope(first_day=FIRST, last_day=LAST))
    buckets = buckets_of(overview.days)
    figures = bucket_figures(overview, buckets)
    weeks_with_runs = 0
    for i, bucket in enumerate(buckets):
        week = overview_of_runs(agent.pk, OverviewScope(first_day=bucket.first,
                                                        last_day=bucket.last))  # fmt: skip
        weeks_with_runs += bool(week.totals["runs"])
        for status, values in week.runs_by_status.items():
            assert figures["runs_by_status"][status][i] == sum(values), (bucket, status)
        assert figures["tokens"][i] == week.totals["tokens"]
        assert figures["credits"][i] == pytest.approx(week.totals["credits"], abs=0.01 * 7)
        merged = {}
        for histogram in week.histograms.values():
            for number, count in histogram.items():
                merged[number] = merged.get(number, 0) + count
        p50, p95 = percentiles(merged, (50, 95))
        assert (figures["latency"]["p50"][i], figures["latency"]["p95"][i]) == (p50, p95)
        assert figures["active_users"][i] == round(sum(week.active_users) / bucket.days, 1)
        assert figures["conversations"][i] == round(sum(week.conversations) / bucket.days, 1)
    assert weeks_with_runs == 7


def test_a_week_of_a_chart_opens_the_runs_of_that_week(owner_client, agent):
    _record_months(agent)
    html = owner_client.get(
        "/overview/", {"from": FIRST.isoformat(), "to": LAST.isoformat()}
    ).content.decode()
    assert "Runs per week by status" in html and "Runs per day by status" not in html
    assert "Active users per day, weekly average" in html
    # Feb 23 to Mar 1: the runs of Feb 28 and Mar 1.
    runs_chart = html.split("Runs per week by status", 1)[1]
    link = unescape(re.search(r'<a class="mark" href="([^"]+)"[^>]*aria-label="2026-02-23 – '
                              r'2026-03-01: 6 runs', runs_chart)[1])  # fmt: skip
    assert "from=2026-02-23" in link and "to=2026-03-01" in link
    listed = set(re.findall(r'href="/runs/(run[^/"]+)/"', owner_client.get(link).content.decode()))
    week = Run.objects.filter(created_at__gte=datetime(2026, 2, 23, tzinfo=UTC),
                              created_at__lt=datetime(2026, 3, 2, tzinfo=UTC))  # fmt: skip
    assert listed == set(week.values_list("id", flat=True)) and len(listed) == 6
    daily = owner_client.get("/overview/", {"days": 90}).content.decode()
    assert "Runs per day by status" in daily and "weekly average" not in daily
