"""The dashboards in Chromium at 1440 and 390 px (issue 26, "Dashboards are look-only"): a
chart's day says its values on hover and on keyboard focus, a table of every number sits behind
each chart, a day, a model or a failing tool opens the matching runs, each end user's cost is on
the Users list and the user's page, the credit-limit warning is on every page, and the Usage
page's tokens add up and its daily credits have their own axis."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlparse

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.activity.demo import activity_seed_demo
from apps.activity.models import Run
from apps.usage.rollup import rollup_rebuild
from apps.usage.services import month_credits
from apps.workspaces.models import Workspace
from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"1440": {"width": 1440, "height": 900}, "390": {"width": 390, "height": 844}}

# Cells of displayed tables whose content is cut off, and whether the page scrolls sideways.
CLIPPED = """
() => {
  const cut = [];
  for (const cell of document.querySelectorAll("table th, table td")) {
    // Folded tables (a closed <details> keeps its cells laid out, unseen) and hidden headers.
    if (!cell.checkVisibility() || cell.closest("details:not([open]), .visually-hidden")) continue;
    if (cell.scrollWidth > cell.clientWidth + 1) cut.push(cell.textContent.trim().slice(0, 40));
    const box = (cell.closest(".chart-data-scroll") || cell.closest(".card")).getBoundingClientRect();
    if (cell.getBoundingClientRect().right > box.right + 1) cut.push("outside: " + cell.textContent.trim().slice(0, 40));
  }
  return {cut, sideways: document.documentElement.scrollWidth > window.innerWidth};
}
"""


@pytest.fixture
def demo(agent):
    activity_seed_demo(agent=agent)
    rollup_rebuild(agent_ids=[agent.pk])
    return agent


@pytest.fixture(params=list(SIZES))
def sized(request, browser, live_server, owner, demo):
    context = browser.new_context(viewport=SIZES[request.param])
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, live_server, owner)
    page.live_server_url = live_server.url
    page.size = request.param
    yield page
    context.close()


def _tab_into_chart(page, chart, *, day: int = 0) -> None:
    """Tab from the element before the charts until a chart's day has the focus: `day`, the
    one the chart's Tab stop is on."""
    page.locator("#all-runs-link").wait_for(state="attached")
    page.locator("#overview-filters a.btn").last.focus()  # Reset, the last control above
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('mark')"):
            break
    expect(chart.locator(".mark").nth(day)).to_be_focused()


def test_a_chart_says_each_days_values_on_hover_and_focus(sized):
    page = sized
    page.goto(f"{page.live_server_url}/overview/?days=7")
    chart = page.locator("#overview-charts figure[data-chart]").first
    marks = chart.locator(".mark")
    expect(marks).to_have_count(7)
    tip = chart.locator(".chart-tip")

    # The pointer: the day under it says its runs in the tooltip.
    last = marks.nth(6)
    last.hover()
    expect(tip).to_be_visible()
    said = last.get_attribute("aria-label")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}: [\d,]+ runs.*", said)
    expect(tip).to_have_text(said)
    tip_box, chart_box = tip.bounding_box(), chart.bounding_box()
    assert (
        chart_box["x"] - 1 <= tip_box["x"]
        and tip_box["x"] + tip_box["width"] <= chart_box["x"] + chart_box["width"] + 1
    )

    # The keyboard: the chart is one Tab stop; the arrows move the focus and the tooltip.
    page.mouse.move(0, 0)  # the pointer out of the way (on a phone the page scrolls under it)
    expect(tip).to_be_hidden()
    _tab_into_chart(page, chart)
    expect(tip).to_have_text(marks.nth(0).get_attribute("aria-label"))
    page.keyboard.press("ArrowRight")
    expect(marks.nth(1)).to_be_focused()
    expect(tip).to_have_text(marks.nth(1).get_attribute("aria-label"))
    page.keyboard.press("End")
    expect(marks.nth(6)).to_be_focused()
    assert (
        marks.nth(6).get_attribute("tabindex") == "0"
        and marks.nth(0).get_attribute("tabindex") == "-1"
    )
    # Tab leaves the days (one stop) for the chart's "Show data"; the tooltip goes.
    page.keyboard.press("Tab")
    expect(chart.locator(".chart-data summary")).to_be_focused()
    expect(tip).to_be_hidden()
    # Back into the chart: the Tab stop stayed on the day left last. Enter opens its runs.
    _tab_into_chart(page, chart, day=6)
    day = marks.nth(6).get_attribute("aria-label")[:10]
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/runs/\?"))
    query = parse_qs(urlparse(page.url).query)
    assert query["from"] == [day] and query["to"] == [day]
    assert page.locator("input[name=from]").input_value() == day


def test_every_chart_has_its_numbers_in_a_table(sized):
    page = sized
    page.goto(f"{page.live_server_url}/overview/?days=7")
    charts = page.locator("#overview-charts figure[data-chart]")
    expect(charts).to_have_count(6)
    for index in range(6):
        chart = charts.nth(index)
        chart.locator(".chart-data summary").click()
        table = chart.locator(".chart-data table")
        expect(table).to_be_visible()
        expect(table.locator("tbody tr")).to_have_count(7)
        # The first day's row links to that day's runs, as its mark does.
        first_mark = chart.locator(".mark").first.get_attribute("href")
        assert table.locator("tbody tr").first.locator("a").get_attribute("href") == first_mark
        result = page.evaluate(CLIPPED)
        assert not result["sideways"], f"chart {index} scrolls the page sideways"
        if page.size == "1440":
            assert result["cut"] == [], f"chart {index}: {result['cut']}"
        chart.locator(".chart-data summary").click()  # fold it again
    # The runs chart's table: a column per status and a total that adds them up.
    runs_chart = charts.nth(0)
    runs_chart.locator(".chart-data summary").click()
    header = runs_chart.locator(".chart-data thead th").all_inner_texts()
    assert [h.strip().lower() for h in header] == [
        "day",
        "completed",
        "failed",
        "aborted",
        "streaming",
        "total",
    ]
    for row in runs_chart.locator(".chart-data tbody tr").all():
        numbers = [int(text.replace(",", "")) for text in row.locator("td").all_inner_texts()]
        assert sum(numbers[:-1]) == numbers[-1]


def test_a_model_and_a_failing_tool_open_their_runs(sized, demo):
    page = sized
    page.goto(f"{page.live_server_url}/overview/?days=30")
    model_link = page.locator("#credits-by-model a").first
    model = model_link.inner_text().strip()
    model_link.click()
    page.wait_for_url(re.compile(r"/runs/\?"))
    query = parse_qs(urlparse(page.url).query)
    assert query["model_id"] == [model] and query["agent"] == [demo.pk] and "from" in query
    assert page.locator("input[name=model_id]").input_value() == model
    listed = page.locator("#run-table tbody tr")
    expect(listed.first).to_be_visible()

    page.goto(f"{page.live_server_url}/overview/?days=30")
    failing = page.locator("#failing-tools a").first
    tool = failing.inner_text().strip()
    failing.click()
    page.wait_for_url(re.compile(r"failed_tool="))
    assert page.locator("input[name=failed_tool]").input_value() == tool
    ids = [
        href.split("/")[2]
        for href in page.locator("#run-table tbody tr a[href^='/runs/run']").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        )
    ]
    assert ids
    for run in Run.objects.filter(agent=demo, id__in=ids):
        assert tool in run.failed_tool_names


def test_each_users_cost_is_on_the_users_list_and_their_page(sized, demo):
    page = sized
    page.goto(f"{page.live_server_url}/users/")
    first = page.locator("#user-table tbody tr").first
    credits = first.locator('td[data-label="Credits"]')
    expect(credits).to_be_visible()
    assert re.fullmatch(r"[\d.]+", credits.inner_text().strip())
    result = page.evaluate(CLIPPED)
    assert not result["sideways"]
    if page.size == "1440":
        assert result["cut"] == []
    first.locator('td[data-label="User"] a').click()
    usage = page.locator("#user-usage")
    expect(usage).to_be_visible()
    assert usage.locator("#user-usage-all td").first.inner_text().strip() != ""
    result = page.evaluate(CLIPPED)
    assert not result["sideways"]
    if page.size == "1440":
        assert result["cut"] == []
    page.locator("#user-overview-link").click()
    expect(page.locator("#picked-user")).to_be_visible()


def test_the_credit_warning_is_on_every_page_near_the_limit(sized, demo):
    page = sized
    today = timezone.now().date()
    used = month_credits(workspace_id=demo.workspace_id, month=today.replace(day=1))
    if used == 0:  # the first minutes of a month: move the runs into this month
        Run.objects.filter(agent=demo).update(created_at=timezone.now() - timedelta(minutes=1))
        rollup_rebuild(agent_ids=[demo.pk])
        used = month_credits(workspace_id=demo.workspace_id, month=today.replace(day=1))
    limit = (used / Decimal("0.9")).quantize(Decimal("0.01"))  # 90 % used
    Workspace.objects.filter(pk=demo.workspace_id).update(monthly_credit_limit=limit)
    for path in ("/runs/", "/overview/", "/knowledge/", "/agents/"):
        page.goto(f"{page.live_server_url}{path}")
        banner = page.locator("#limit-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("80 % of the monthly credit limit is used")
        assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    page.locator("#limit-banner-link").click()
    page.wait_for_url(re.compile(r"/usage/"))
    expect(page.locator("#limit-banner")).to_contain_text("(90.0 %)")


def test_usage_tokens_add_up_and_daily_credits_have_their_own_chart(sized, demo):
    page = sized
    page.goto(f"{page.live_server_url}/usage/?period=90d")
    rows = page.locator("#tokens-by-kind tr.token-row td.num").all_inner_texts()
    total = page.locator("#token-total").inner_text()
    assert sum(int(v.replace(",", "")) for v in rows) == int(total.replace(",", ""))
    assert page.locator("#stat-tokens").inner_text().strip() == total.strip()

    daily = page.locator("#credits-chart figure[data-chart]")
    month = page.locator("#month-chart figure[data-chart]")
    expect(daily.locator(".mark")).to_have_count(90)
    assert daily.locator("polyline").count() == 0 and month.locator("polyline").count() == 1
    # The tallest daily bar reaches the top of its own axis (not flattened under the total).
    heights = daily.locator("rect.bar").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().height)"
    )
    plot = daily.locator("svg.chart").bounding_box()["height"]
    assert max(heights) > plot * 0.4
    # Hover a day: its credits show.
    busiest = daily.locator(".mark", has=page.locator("rect.bar")).last
    busiest.hover()
    expect(daily.locator(".chart-tip")).to_be_visible()
    expect(daily.locator(".chart-tip")).to_contain_text("credits")
    # That day opens the workspace's usage of that day, then an Agent's runs of it.
    day = busiest.get_attribute("aria-label")[:10]
    busiest.click()
    page.wait_for_url(re.compile(rf"from={day}"))
    expect(page.locator("#period-label")).to_be_visible()
    page.locator("#agent-usage tbody tr a").first.click()
    page.wait_for_url(re.compile(r"/runs/\?"))
    assert parse_qs(urlparse(page.url).query)["from"] == [day]
    result_page = page.evaluate(CLIPPED)
    assert not result_page["sideways"]
