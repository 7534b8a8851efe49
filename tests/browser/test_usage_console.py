"""An owner reads the workspace's usage, sets the monthly credit limit and sees the warning,
switches the period, and exports the CSV; a member sees the figures but no limit form."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.workspaces.models import Workspace
from tests.browser.conftest import log_in
from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_read_usage_set_the_limit_switch_period_and_export(console_page, agent, sibling_agent):
    page = console_page
    now = timezone.now()
    record_run(agent, at=now - timedelta(minutes=5), credits_charged=5.0)
    record_run(sibling_agent, at=now - timedelta(minutes=4), credits_charged=3.5)

    page.goto(f"{page.live_server_url}/overview/")
    page.click("nav.nav >> text=Usage")
    page.locator("#usage-report").wait_for()
    assert page.locator("#stat-runs").inner_text().strip() == "2"
    assert page.locator("#stat-credits").inner_text().strip() == "8.50"
    rows = page.locator("#agent-usage tbody tr")
    assert rows.count() == 2
    assert "Support Agent" in rows.first.inner_text()  # most credits first
    assert page.locator("#credits-chart svg.chart rect.bar").count() >= 1
    assert page.locator("#no-limit").is_visible()

    page.fill("#id_monthly_credit_limit", "10")
    page.click("#save-limit")
    page.get_by_text("Monthly credit limit set to 10.00.").wait_for()
    assert Workspace.objects.get(pk=agent.workspace_id).monthly_credit_limit == 10
    banner = page.locator("#limit-banner")
    assert "80 % of the monthly credit limit is used" in banner.inner_text()
    # The limit is drawn with the month to date, on its own chart (the daily bars have theirs).
    assert page.locator("#month-chart line.limit-line").count() == 1

    page.select_option("#period-select", "last_month")
    # Playwright's string predicates would need eval, which the page's CSP refuses.
    previous_to = page.locator("#usage-report").get_attribute("data-to")
    expect(page.locator("#usage-report")).not_to_have_attribute("data-to", previous_to)
    assert page.locator("#stat-runs").inner_text().strip() == "0"
    assert "period=last_month" in page.url

    page.select_option("#period-select", "custom")
    page.fill("#period-from", (now - timedelta(days=3)).date().isoformat())
    page.fill("#period-to", now.date().isoformat())
    page.click("#apply-period")
    expect(page.locator("#usage-report")).to_have_attribute("data-to", now.date().isoformat())
    assert page.locator("#stat-runs").inner_text().strip() == "2"

    with page.expect_download() as download_info:
        page.click("#export-csv")
    lines = open(download_info.value.path()).read().splitlines()  # noqa: SIM115
    assert lines[0].startswith("date,agent_id,agent_name,runs,")
    assert len(lines) == 3  # one row per Agent on today's date


def test_a_member_sees_usage_but_no_limit_form(page, live_server, member, agent):
    log_in(page, live_server, member)
    page.goto(f"{live_server.url}/usage/")
    page.locator("#usage-report").wait_for()
    assert page.locator("#owner-only").is_visible()
    assert page.locator("#credit-limit-form").count() == 0
