"""Word search in the console (issue 36, item 3): the search boxes of Conversations and Runs
find what was said, show the best matches with the words marked (and any markup in them as
text), and narrow the table to the matched conversations (runs)."""

import re

import pytest
from playwright.sync_api import expect

from tests.activity.test_services_recording import record

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def said(agent):
    def conversation(conversation_id, title, text, n):
        return [
            {"type": "conversation", "id": conversation_id, "title": title,
             "created_at": f"2025-02-01T10:00:0{n}Z"},
            {"type": "message", "id": f"msg_{conversation_id}", "conversation_id": conversation_id,
             "role": "user", "parts": [{"type": "text", "text": text}],
             "created_at": f"2025-02-01T10:00:0{n}Z"},
        ]  # fmt: skip

    record(
        agent,
        *conversation("conv_jacket", "Order help", "I want refunds for the blue jacket.", 1),
        *conversation("conv_hostile", "Odd one", "<img src=x onerror=alert(1)> refund me", 2),
        *conversation("conv_weather", "Weather", "Will it rain in Lisbon tomorrow?", 3),
        {"type": "run", "id": "run_ship", "conversation_id": "conv_jacket", "request_id": "r1",
         "sdk_version": "5.0.0", "model_id": "gpt-4.1-mini"},
        {"type": "run", "id": "run_rain", "conversation_id": "conv_weather", "request_id": "r2",
         "sdk_version": "5.0.0"},
        {"type": "step", "id": "st_ship", "run_id": "run_ship", "kind": "tool",
         "name": "lookup_order", "output": {"status": "shipped to Porto"}},
        {"type": "step", "id": "st_rain", "run_id": "run_rain", "kind": "tool",
         "name": "get_weather", "output": {"forecast": "rain"}},
    )  # fmt: skip


def test_conversations_and_runs_search_boxes_find_rank_and_mark_words(console_page, said):
    page = console_page
    page.goto(f"{page.live_server_url}/conversations/")
    page.fill("#conversation-filters input[name=q]", "refund")
    matches = page.locator("#word-matches")
    expect(matches.locator("mark").first).to_have_text(re.compile("refund", re.I))
    expect(page).to_have_url(re.compile(r"q=refund"))
    expect(matches.locator("li.word-match")).to_have_count(2)
    # The hostile message shows its markup as text: nothing of it became an element.
    expect(matches).to_contain_text("<img src=x onerror=alert(1)>")
    assert matches.locator("img").count() == 0
    # The table holds the conversations whose messages matched, though no title says refund.
    table = page.locator("#conversation-table table")
    expect(table).to_contain_text("Order help")
    expect(table).to_contain_text("Odd one")
    expect(table).not_to_contain_text("Weather")
    # A title still matches.
    page.fill("#conversation-filters input[name=q]", "weather")
    expect(table).to_contain_text("Weather")
    expect(page.locator("#word-matches")).to_contain_text("No message holds")
    # A match opens its conversation at the message.
    page.fill("#conversation-filters input[name=q]", "jacket")
    page.locator("#word-matches li.word-match a").first.click()
    expect(page).to_have_url(re.compile(r"/conversations/conv_jacket/#message-msg_conv_jacket"))

    page.goto(f"{page.live_server_url}/runs/")
    page.fill("#run-filters input[name=q]", "porto")
    expect(page.locator("#word-matches mark")).to_have_text("Porto")
    expect(page.locator("#word-matches")).to_contain_text("lookup_order")
    runs = page.locator("#run-table table")
    expect(runs.locator("tbody tr")).to_have_count(1)
    expect(runs).to_contain_text("run_ship")
    expect(page).to_have_url(re.compile(r"q=porto"))
