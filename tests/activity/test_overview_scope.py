"""The Overview over any date range, narrowed by model, user and status, with axis labels that
are HTML text (never stretched with the plot)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from django.urls import reverse

from apps.activity import charts
from apps.activity.overview import OverviewScope, overview_get, overview_scope_parse
from apps.common.charts import X_LABELS
from apps.common.latency import bucket_of, bucket_value
from apps.usage.rollup import rollup_rebuild
from tests.activity.factories import conversation_factory, end_user_factory, run_factory

pytestmark = pytest.mark.django_db


def _at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@pytest.fixture
def spread(agent):
    """Runs on chosen days of 2026-03, of two models, two users and two statuses."""
    alice = end_user_factory(agent=agent, display_name="Alice")
    bob = end_user_factory(agent=agent, display_name="Bob")
    alice_talk = conversation_factory(agent=agent, user=alice)
    bob_talk = conversation_factory(agent=agent, user=bob)
    made = {}
    made["in_a"] = run_factory(conversation=alice_talk, created_at=_at(date(2026, 3, 10)),
                               model_id="big", tool_names=["search"], total_turn_latency_ms=100)  # fmt: skip
    made["in_b"] = run_factory(conversation=bob_talk, created_at=_at(date(2026, 3, 12)),
                               model_id="small", status="failed", tool_names=["search", "fetch"],
                               failed_tool_names=["fetch"], total_turn_latency_ms=300)  # fmt: skip
    made["last_day"] = run_factory(conversation=alice_talk, created_at=_at(date(2026, 3, 14), 23),
                                   model_id="big", total_turn_latency_ms=200)  # fmt: skip
    made["after"] = run_factory(conversation=alice_talk, created_at=_at(date(2026, 3, 15), 0))
    made["before_range"] = run_factory(conversation=bob_talk, created_at=_at(date(2026, 3, 5)),
                                       model_id="big")  # fmt: skip
    # Made around the recording service: the usage rollup (whose latency histograms the
    # unfiltered Overview reads) is rebuilt from them, as it would have kept itself.
    rollup_rebuild(agent_ids=[agent.pk])
    return {"alice": alice, "bob": bob, **made}


def test_a_custom_range_counts_its_days_only_and_compares_with_as_many_days_before(agent, spread):
    scope = OverviewScope(first_day=date(2026, 3, 10), last_day=date(2026, 3, 14))
    data = overview_get(agent=agent, scope=scope)
    assert data.days[0] == date(2026, 3, 10) and data.days[-1] == date(2026, 3, 14)
    assert data.totals["runs"] == 3  # the 15th's run at midnight is the next day's
    assert data.previous["runs"] == 1  # 5th to 9th: the run of the 5th
    assert sum(data.runs_by_status["failed"]) == 1
    # The histogram's percentiles (apps.common.latency), as the Usage page computes them.
    assert data.totals["p50"] == round(bucket_value(bucket_of(200)), 1)
    assert dict(data.top_tools) == {"search": 2, "fetch": 1}


def test_filters_narrow_every_number(agent, spread):
    first, last = date(2026, 3, 10), date(2026, 3, 14)
    by_model = overview_get(
        agent=agent, scope=OverviewScope(first_day=first, last_day=last, model_id="big")
    )
    assert by_model.totals["runs"] == 2
    assert by_model.credits_by_model == [("big", 2, 3.0)]
    assert by_model.top_tools == [("search", 1)]
    assert by_model.failing_tools == []
    assert by_model.totals["p95"] == round(bucket_value(bucket_of(200)), 1)  # nearest rank

    by_user = overview_get(
        agent=agent,
        scope=OverviewScope(first_day=first, last_day=last, user_id=spread["bob"].id),
    )
    assert by_user.totals["runs"] == 1 and by_user.totals["users"] == 1
    assert by_user.previous["runs"] == 1  # Bob's run of the 5th

    failed = overview_get(
        agent=agent, scope=OverviewScope(first_day=first, last_day=last, status="failed")
    )
    assert failed.totals["runs"] == 1
    assert failed.failing_tools == [("fetch", 1)]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "2026-03-14", "to": "2026-03-10"}, "The start of the range is after its end."),
        ({"from": "2025-01-01", "to": "2026-03-10"}, "A range covers at most 366 days."),
        ({"from": "10/03/2026"}, "Dates are written YYYY-MM-DD."),
    ],
)
def test_bad_ranges_say_why_and_show_the_default_period(params, message):
    scope, preset, error = overview_scope_parse(params)
    assert error == message
    assert preset == 30 and scope.days == 30


def test_one_date_alone_and_unknown_filters():
    scope, preset, error = overview_scope_parse(
        {"from": "2026-03-01", "to": "2026-03-31", "status": "exploded", "model_id": "big"}
    )
    assert (scope.first_day, scope.last_day, preset, error) == (
        date(2026, 3, 1),
        date(2026, 3, 31),
        None,
        None,
    )
    assert scope.status == "" and scope.model_id == "big"
    only_to, _preset, _error = overview_scope_parse({"to": "2026-03-31"})
    assert only_to.first_day == date(2026, 3, 2) and only_to.days == 30


def test_the_page_shows_a_filtered_custom_range(client, owner, agent, spread):
    client.force_login(owner)
    html = client.get(
        reverse("activity:overview"),
        {"from": "2026-03-10", "to": "2026-03-14", "user_id": "Alice", "model_id": "big"},
    ).content.decode()
    scope_line = re.search(r'id="overview-scope">(.*?)</p>', html, re.S).group(1)
    assert "Mar 10, 2026 – Mar 14, 2026 (5 days)" in scope_line
    assert "model <code>big</code>" in scope_line
    assert 'user <span class="chip picked-user" id="picked-user">Alice</span>' in scope_line
    assert re.search(r'id="stat-runs">2<', html)
    # The preset links keep the filters.
    assert f"user_id={spread['alice'].id}" in html and "days=7" in html

    bad = client.get(reverse("activity:overview"), {"from": "2026-03-14", "to": "2026-03-01"})
    assert "The start of the range is after its end." in bad.content.decode()


def test_axis_labels_are_text_beside_the_plot_not_in_it():
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(366)]
    html = str(charts.bars(days, [1] * 366, "Tokens per day", unit="tokens", links=["#"] * 366))
    svg = html.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert "<text" not in svg  # nothing in the stretched plot is text
    axis = html.split('class="chart-x"', 1)[1].split("</div>", 1)[0]
    labels = re.findall(r"<span>([^<]+)</span>", axis)
    assert labels[0] == "Jan 01, 2026" and labels[-1] == "Jan 01, 2027"
    assert len(labels) == X_LABELS
    week = [date(2026, 3, 10) + timedelta(days=i) for i in range(7)]
    short = str(charts.bars(week, [1] * 7, "Tokens per day", unit="tokens", links=["#"] * 7))
    assert "Mar 10<" in short and ", 2026" not in short
