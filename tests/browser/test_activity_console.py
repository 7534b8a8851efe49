"""The activity console in a real browser, on seeded demo data: every page opens, filters
update the table in place (and the URL), a conversation opens and a tool call expands."""

import re

import pytest
from playwright.sync_api import expect

from apps.activity.demo import activity_seed_demo
from tests.activity.factories import conversation_factory, message_factory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def seeded(agent):
    activity_seed_demo(agent=agent)
    conversation = conversation_factory(agent=agent, title="Browser tool call check")
    message_factory(
        conversation=conversation,
        role="assistant",
        parts=[
            {"type": "tool-lookup_order", "toolCallId": "call_b1", "state": "output-available",
             "input": {"order": 4242}, "output": {"status": "shipped"}},
            {"type": "text", "text": "Your order **shipped**."},
        ],
    )  # fmt: skip
    return conversation


def test_overview_period_selector_swaps_the_charts(console_page, seeded):
    page = console_page
    page.goto(f"{page.live_server_url}/overview/")
    expect(page.locator("#overview-charts svg.chart").first).to_be_visible()
    expect(page.locator("#top-tools")).to_be_visible()
    page.get_by_role("link", name="7 days").click()
    expect(page.locator('#overview-charts[data-days="7"]')).to_be_attached()
    expect(page).to_have_url(re.compile(r"days=7"))


def _axis_labels_readable(page) -> None:
    """Every x-axis label is at least 10 px text and no two of a chart overlap."""
    boxes = page.evaluate(
        """() => [...document.querySelectorAll('.chart-x')].map(row =>
            [...row.children].map(label => {
                const box = label.getBoundingClientRect();
                return [box.left, box.right, parseFloat(getComputedStyle(label).fontSize)];
            }))"""
    )
    assert boxes
    for row in boxes:
        assert all(size >= 10 for _left, _right, size in row)
        for (_l1, right, _s1), (left, _r2, _s2) in zip(row, row[1:], strict=False):
            assert right <= left, row


def test_overview_custom_range_and_filters_with_readable_axes(console_page, seeded):
    page = console_page
    page.goto(f"{page.live_server_url}/overview/?days=90")
    _axis_labels_readable(page)
    page.select_option("#overview-filters select[name=status]", "failed")
    expect(page.locator("#overview-scope")).to_contain_text("status failed")
    expect(page).to_have_url(re.compile(r"status=failed"))
    page.fill("#overview-filters input[name=from]", "2026-01-01")
    page.fill("#overview-filters input[name=to]", "2026-03-31")
    page.click("#overview-filters button[type=submit]")
    expect(page.locator("#overview-scope")).to_contain_text("Jan 1, 2026 – Mar 31, 2026 (90 days)")
    expect(page.locator('#overview-charts[data-days="90"]')).to_be_attached()
    _axis_labels_readable(page)

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{page.live_server_url}/overview/?days=30")
    _axis_labels_readable(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_conversation_filter_then_open_one_and_expand_a_tool_call(console_page, seeded):
    page = console_page
    page.goto(f"{page.live_server_url}/conversations/")
    expect(page.locator("#conversation-table table")).to_be_visible()
    page.select_option("select[name=status]", "failed")
    expect(page).to_have_url(re.compile(r"status=failed"))
    badges = page.locator("#conversation-table tbody .badge")
    expect(badges.first).to_have_text("failed")
    assert set(badges.all_inner_texts()) == {"failed"}

    page.fill("input[name=q]", "Browser tool call")
    page.select_option("select[name=status]", "")
    expect(page.locator("#conversation-table tbody tr")).to_have_count(1)
    page.get_by_role("link", name="Browser tool call check").click()

    expect(page.locator("h1")).to_have_text("Browser tool call check")
    tool = page.locator("details.part-tool").first
    expect(tool.locator("pre.tool-input")).not_to_be_visible()
    tool.locator("summary").click()
    expect(tool.locator("pre.tool-input")).to_be_visible()
    expect(tool.locator("pre.tool-input")).to_contain_text('"order": 4242')
    expect(tool.locator("pre.tool-output")).to_contain_text("shipped")
    expect(page.locator(".part-text strong")).to_have_text("shipped")


def test_users_and_runs_pages_and_details(console_page, seeded):
    page = console_page
    page.goto(f"{page.live_server_url}/users/")
    rows = page.locator("#user-table tbody tr")
    expect(rows).to_have_count(25)
    page.locator("#user-table").get_by_role("link", name="Next →").click()
    expect(page).to_have_url(re.compile(r"after="))
    expect(rows).to_have_count(25)
    rows.first.locator("a").first.click()
    expect(page.locator("h2", has_text="Conversations")).to_be_visible()

    page.goto(f"{page.live_server_url}/runs/")
    page.select_option("select[name=status]", "failed")
    expect(page).to_have_url(re.compile(r"status=failed"))
    expect(page.locator("#run-table tbody .badge").first).to_have_text("failed")
    page.locator("#run-table tbody tr").first.locator("a").first.click()
    expect(page.locator("h2", has_text="Usage")).to_be_visible()
    expect(page.locator(".error-code").first).to_be_visible()


def test_older_then_newer_lands_on_the_same_runs_and_answers_show_their_turn(console_page, seeded):
    page = console_page
    page.goto(f"{page.live_server_url}/runs/")
    links = page.locator('#run-table tbody tr td[data-label="Run"] a')
    expect(links.first).to_be_visible()
    first_page = links.evaluate_all("links => links.map(link => link.href)")
    expect(page.locator("#newer-link")).to_have_count(0)  # the newest page has nothing newer
    page.locator("#run-table").get_by_role("link", name="Next →").click()
    expect(page).to_have_url(re.compile(r"after="))
    expect(page.locator("#newer-link")).to_be_visible()
    page.locator("#newer-link").click()
    expect(page).to_have_url(re.compile(r"before="))
    expect(links.first).to_have_attribute("href", re.compile(re.escape(first_page[0][-30:])))
    assert links.evaluate_all("links => links.map(link => link.href)") == first_page

    # The conversations list counts each conversation's messages and runs.
    page.goto(f"{page.live_server_url}/conversations/")
    runs = page.locator('#conversation-table td[data-column="runs"]')
    expect(runs.first).to_be_visible()
    with_runs = next(i for i, text in enumerate(runs.all_inner_texts()) if text.strip() != "0")
    page.locator("#conversation-table tbody tr").nth(with_runs).locator("a").first.click()
    expect(page.locator(".turn-usage").first).to_contain_text("tokens")
