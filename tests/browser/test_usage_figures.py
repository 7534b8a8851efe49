"""Usage's month-to-date line stops at today; Overview's changes and credits read sensibly
(issue 38, defect 5)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_month_to_date_line_stops_at_today(console_page, agent):
    page = console_page
    now = timezone.now()
    record_run(agent, at=now - timedelta(minutes=5), credits_charged=5.0)
    page.goto(f"{page.live_server_url}/usage/?period=this_month")
    dots = page.locator("#month-chart line.line-0.dot")
    # One point per day of the month so far, none for the days still to come.
    assert dots.count() == now.date().day


def test_overview_change_from_almost_nothing_is_capped(console_page, agent):
    page = console_page
    now = timezone.now()
    record_run(agent, at=now - timedelta(days=10), credits_charged=0.0001)
    record_run(agent, at=now - timedelta(minutes=5), credits_charged=41.2662)
    record_run(agent, at=now - timedelta(minutes=4), credits_charged=0.5)
    page.goto(f"{page.live_server_url}/overview/?days=7")
    change = page.locator('[data-change="credits"]').inner_text()
    assert "> +999%" in change and "412" not in change
    # Credits read with two decimals everywhere on the page: the card and the model table.
    assert page.locator(".stat", has_text="Credits").locator(".value").inner_text() == "41.77"
    model_credits = page.locator("#credits-by-model td").last.inner_text()
    assert model_credits.strip().endswith("41.77"), model_credits
