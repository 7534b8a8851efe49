"""The Overview compares each headline number with the period before, and splits credits by
model."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.activity.overview import change_between, overview_get
from tests.activity.factories import conversation_factory, end_user_factory, run_factory

pytestmark = pytest.mark.django_db


def test_change_between_periods():
    assert change_between(150, 100, rise_means="good") == {"percent": 50.0, "tone": "good"}
    assert change_between(50, 100, rise_means="good") == {"percent": -50.0, "tone": "bad"}
    assert change_between(120, 100, rise_means="neutral")["tone"] == "neutral"
    # Nothing before: no percentage (a rise from nothing has no size).
    assert change_between(7, 0, rise_means="good") == {"percent": None, "tone": "neutral"}
    assert change_between(None, None, rise_means="good")["percent"] is None


def test_overview_compares_with_the_previous_period_of_equal_length(agent):
    now = timezone.now()
    conversation = conversation_factory(agent=agent, user=end_user_factory(agent=agent))
    for days_ago in (1, 2, 3):  # this week: three runs
        run_factory(conversation=conversation, created_at=now - timedelta(days=days_ago),
                    model_id="big", credits_charged=2.0)  # fmt: skip
    run_factory(conversation=conversation, created_at=now - timedelta(days=4), model_id="small",
                credits_charged=0.5)  # fmt: skip
    for days_ago in (8, 9):  # the week before: two runs
        run_factory(conversation=conversation, created_at=now - timedelta(days=days_ago),
                    model_id="big", credits_charged=1.0)  # fmt: skip
    run_factory(conversation=conversation, created_at=now - timedelta(days=20))  # out of both

    data = overview_get(agent=agent, days=7)
    assert (data.totals["runs"], data.previous["runs"]) == (4, 2)
    assert data.changes["runs"] == {"percent": 100.0, "tone": "good"}
    assert data.changes["credits"]["percent"] == pytest.approx((6.5 - 2.0) / 2.0 * 100)
    assert data.credits_by_model == [("big", 3, 6.0), ("small", 1, 0.5)]


def test_overview_page_shows_changes_and_credits_per_model(client, owner, agent):
    conversation = conversation_factory(agent=agent)
    run_factory(conversation=conversation, model_id="gpt-test", credits_charged=1.5)
    client.force_login(owner)
    html = client.get(reverse("activity:overview"), {"days": 7}).content.decode()
    assert 'data-change="runs">— vs previous 7 days<' in html
    credits = html.split('id="credits-by-model"', 1)[1]
    assert "<code>gpt-test</code>" in credits and ">1.50</td>" in credits
