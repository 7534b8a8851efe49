"""A run's trace in Chromium: spans sent by real OpenTelemetry clients (the Vercel AI SDK run
with Node, the Python SDK) appear on the run page as a waterfall whose steps open, by mouse or
keyboard, to their input and output; the page stays readable at 390 px."""

import re

import pytest
from playwright.sync_api import expect

from apps.activity.models import Run
from tests.activity.test_otlp import _sdk_spans
from tests.activity.test_otlp_ai_sdk import run_ai_sdk, warm_up

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_ai_sdk_trace_shows_on_the_run_page(console_page, make_api):
    page = console_page
    writer = make_api(scopes=["activity:write"])
    run_ai_sdk(base_url=page.live_server_url, raw_key=writer.raw_key, conversation_id="chat-b1")
    run = Run.objects.get()
    page.goto(f"{page.live_server_url}/runs/{run.id}/")
    rows = page.locator("#trace .trace-row")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("ai.streamText")
    tool = page.locator('#trace .trace-row[data-kind="tool"]')
    expect(tool).to_contain_text("lookupOrder")
    tool.locator("summary").click()
    body = tool.locator(".step-body")
    expect(body).to_contain_text("Input")
    expect(body.locator(".json-tree").first).to_contain_text("1042")
    expect(body.locator(".json-tree").nth(1)).to_contain_text("shipped")
    model = page.locator('#trace .trace-row[data-kind="model"]').first
    expect(model).to_contain_text("mock-model-1")
    expect(model).to_contain_text("60 tokens")
    # The answer links to the transcript, which links back.
    page.get_by_role("link", name=re.compile("Assistant message")).click()
    expect(page.locator("article.message-assistant")).to_contain_text("Order 1042 has shipped.")
    page.locator("article.message-assistant a.message-run").click()
    expect(page).to_have_url(re.compile(rf"/runs/{run.id}/$"))


def test_keyboard_opens_a_failed_step_and_the_page_fits_a_phone(
    console_page, make_api, monkeypatch
):
    page = console_page
    writer = make_api(scopes=["activity:write"])
    base = page.live_server_url
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{base}/v1/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer {writer.raw_key}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60")
    warm_up(base)
    _sdk_spans("http/protobuf", processor="batch")
    run = Run.objects.get()

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base}/runs/{run.id}/")
    expect(page.locator("#trace .trace-row")).to_have_count(5)
    failed = page.locator("#trace .trace-row.step-failed")
    expect(failed).to_contain_text("failed: refund service unavailable")
    # Keyboard only: Tab to the failed step's summary, Enter opens it.
    summary = failed.locator("summary")
    for _ in range(60):
        page.keyboard.press("Tab")
        if summary.evaluate("element => element === document.activeElement"):
            break
    else:
        raise AssertionError("the failed step's summary is not reachable with Tab")
    page.keyboard.press("Enter")
    expect(failed.locator(".step-error-box")).to_contain_text("refund service unavailable")
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the run page scrolls sideways by {overflow}px at 390px"
    bar = failed.locator("svg.step-bar").bounding_box()
    assert bar is not None and bar["width"] > 200  # the bar takes its own line on a phone
