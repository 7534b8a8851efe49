"""The dashboards' numbers agree (issue 26, "Dashboards are look-only"): one latency computation
for the Usage page and the Overview, "Tokens by kind" rows that add up to its Total, and the
credit-limit warning on every console page at the cost of one cache read."""

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.activity.demo import activity_seed_demo
from apps.activity.overview import OverviewScope, overview_get
from apps.usage import selectors
from apps.usage.banner import _key
from apps.usage.pages import tokens_by_kind
from apps.usage.rollup import rollup_rebuild
from apps.workspaces.models import Workspace
from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(NOW, tick=False)


def test_usage_and_overview_give_the_same_percentiles_for_the_same_days(agent, sibling_agent):
    latencies = {
        date(2026, 5, 17): [120.0, 480.0, 950.0, 3100.0, 7.5],
        date(2026, 5, 18): [2400.0, 2400.0, 15000.0],
        date(2026, 5, 20): [33.0, 64.0, 1024.0, 50000.0, 800.0, 810.0],
    }
    for day, values in latencies.items():
        for hour, latency in enumerate(values):
            at = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
            record_run(agent, at=at, total_turn_latency_ms=latency)
    # Another Agent of the workspace: the Usage page's row of `agent` must not count it.
    record_run(sibling_agent, at=NOW, total_turn_latency_ms=99999.0)

    first, last = date(2026, 5, 16), date(2026, 5, 20)
    overview = overview_get(agent=agent, scope=OverviewScope(first_day=first, last_day=last))
    usage = selectors.usage_get(
        workspace=agent.workspace, period=selectors.Period(first, last), agent=agent
    )
    whole = selectors.usage_get(workspace=agent.workspace, period=selectors.Period(first, last))
    row = dict((a.pk, figures) for a, figures in whole.agents)[agent.pk]

    assert (overview.totals["p50"], overview.totals["p95"]) == usage.totals.latency()
    assert row.latency() == usage.totals.latency()
    assert overview.totals["p50"] is not None
    for (day, _last, figures), p50, p95 in zip(
        usage.series, overview.p50, overview.p95, strict=True
    ):
        assert figures.latency() == (p50, p95), day
    assert overview.p50[0] is None  # the 16th had no runs: no number, on both pages


def test_tokens_by_kind_add_up_to_the_total_with_the_demo_data(owner_client, agent):
    activity_seed_demo(agent=agent)
    rollup_rebuild(agent_ids=[agent.pk])
    period = selectors.Period(NOW.date() - timedelta(days=89), NOW.date())
    usage = selectors.usage_get(workspace=agent.workspace, period=period)
    rows, total, cache_rows = tokens_by_kind(usage.totals.counters)
    assert total == usage.totals.counters["total_tokens"] > 0
    assert sum(value for _, value in rows) == total
    assert [label for label, _ in cache_rows] == ["Cache read", "Cache write"]

    html = owner_client.get("/usage/?period=90d").content.decode()
    table = html.split('id="tokens-by-kind"', 1)[1].split('class="token-cache"', 1)[0]
    shown = [int(v.replace(",", "")) for v in re.findall(r'<td class="num">([\d,-]+)</td>', table)]
    shown_total = int(re.search(r'id="token-total"><strong>([\d,]+)<', table)[1].replace(",", ""))
    assert len(shown) >= 2 and sum(shown) == shown_total == total
    # The headline's Tokens is the same number.
    assert f'id="stat-tokens">{total:,}<' in html


def test_tokens_reported_only_as_a_total_get_a_row_of_their_own():
    counters = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 40,
                "cache_read_tokens": 7, "cache_write_tokens": 1}  # fmt: skip
    rows, total, _cache = tokens_by_kind(counters)
    assert rows == [("Input", 10), ("Output", 5), ("Not split into input and output", 25)]
    assert sum(value for _, value in rows) == total == 40


def test_credits_per_day_and_month_to_date_are_two_charts_on_their_own_axes(owner_client, agent):
    for day, credits in ((1, 100.0), (2, 1.0), (19, 2.0), (20, 3.0)):
        record_run(agent, at=datetime(2026, 5, day, 9, tzinfo=UTC), credits_charged=credits)
    html = owner_client.get("/usage/").content.decode()
    daily = html.split('id="credits-chart"', 1)[1].split("</section>", 1)[0]
    month = html.split('id="month-chart"', 1)[1].split("</section>", 1)[0]
    # Each chart's axis is its own: the daily bars top out at the biggest day, not at the
    # month's running total.
    assert re.search(r'class="chart-y"[^>]*><span>100</span>', daily)
    assert re.search(r'class="chart-y"[^>]*><span>200</span>', month)  # 106 rounds up to 200
    assert "polyline" not in daily and "polyline" in month
    assert "2026-05-20: 3.00 credits" in daily
    assert "2026-05-20: month to date 106.00 credits" in month


# --- the credit-limit warning on every page -------------------------------------------------


def _queries(client, path: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.parametrize("path", ["/runs/", "/overview/", "/users/", "/knowledge/", "/agents/"])
def test_the_warning_shows_on_every_console_page(owner_client, agent, path):
    Workspace.objects.filter(pk=agent.workspace_id).update(monthly_credit_limit=Decimal(10))
    record_run(agent, at=NOW, credits_charged=8.5)
    html = owner_client.get(path).content.decode()
    assert 'id="limit-banner"' in html and 'data-state="warning"' in html
    assert "8.50 of 10.00 credits used in May 2026 (85.0 %)" in html
    assert 'id="limit-banner-link"' in html


def test_the_warning_costs_no_query_once_cached_and_nothing_without_a_limit(owner_client, agent):
    record_run(agent, at=NOW, credits_charged=9.5)
    _queries(owner_client, "/runs/")  # the session's first page may do more
    without_limit = _queries(owner_client, "/runs/")
    assert not any("usage_dailyusage" in sql for sql in without_limit)

    Workspace.objects.filter(pk=agent.workspace_id).update(monthly_credit_limit=Decimal(10))
    cache.delete(_key(agent.workspace_id, date(2026, 5, 1)))
    first = _queries(owner_client, "/runs/")
    assert sum("usage_dailyusage" in sql for sql in first) == 1  # the miss: one sum
    cached = _queries(owner_client, "/runs/")
    assert not any("usage_dailyusage" in sql for sql in cached)
    assert len(cached) == len(without_limit)


def test_crossing_a_threshold_shows_the_warning_on_the_next_page(
    owner_client, agent, django_capture_on_commit_callbacks
):
    Workspace.objects.filter(pk=agent.workspace_id).update(monthly_credit_limit=Decimal(10))
    record_run(agent, at=NOW, credits_charged=5.0)
    assert 'id="limit-banner"' not in owner_client.get("/runs/").content.decode()  # cached: 5
    with django_capture_on_commit_callbacks(execute=True):
        record_run(agent, at=NOW, credits_charged=4.0)  # 90 %: the 80 % threshold is announced
    html = owner_client.get("/runs/").content.decode()
    assert 'data-state="warning"' in html and "9.00 of 10.00" in html
    with django_capture_on_commit_callbacks(execute=True):
        record_run(agent, at=NOW, credits_charged=2.0)
    html = owner_client.get("/conversations/").content.decode()
    assert 'data-state="exceeded"' in html and 'role="alert"' in html


def test_a_workspace_under_80_percent_shows_no_warning(owner_client, agent):
    Workspace.objects.filter(pk=agent.workspace_id).update(monthly_credit_limit=Decimal(100))
    record_run(agent, at=NOW, credits_charged=79.0)
    assert 'id="limit-banner"' not in owner_client.get("/runs/").content.decode()
    assert 'id="limit-banner"' not in owner_client.get("/usage/").content.decode()
