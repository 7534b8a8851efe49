"""The run page puts the trace first, with the totals in one line above it; a step's input or
output that holds chat messages reads as a transcript (role, text, tool calls), its JSON tree a
click away with its first levels open (issue 38, defect 8)."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.activity.models import RunStep
from tests.activity.factories import conversation_factory, run_factory

pytestmark = pytest.mark.django_db(transaction=True)
T0 = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def test_trace_first_and_messages_open(console_page, agent):
    page = console_page
    run = run_factory(
        agent=agent, conversation=conversation_factory(agent=agent), id="run_first",
        created_at=T0, completed_at=T0 + timedelta(seconds=2), total_turn_latency_ms=2000.0,
    )  # fmt: skip
    RunStep.objects.create(
        agent_id=agent.pk, run_id=run.id, id="st_model", name="chat", kind="model",
        started_at=T0, ended_at=T0 + timedelta(seconds=1), duration_ms=1000,
        input={"system": "You answer about orders.", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Where is order 1042?"}]},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1",
                                               "toolName": "order_lookup",
                                               "input": {"order": 1042}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1",
                                          "toolName": "order_lookup",
                                          "output": {"status": "shipped"}}]},
        ]},
        output=[{"role": "assistant", "parts": [{"type": "text", "content": "It has shipped."}]}],
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    page.goto(f"{page.live_server_url}/runs/{run.id}/")
    trace_top = page.locator(".trace-card").bounding_box()["y"]
    cards_top = page.locator(".grid.grid-2").bounding_box()["y"]
    assert trace_top < cards_top
    totals = page.locator("#trace-totals").inner_text()
    assert "1500 tokens" in totals and "2.0 s" in totals

    row = page.locator('#trace .trace-row[data-step-id="st_model"]')
    row.locator("summary").first.click()
    body = page.locator(".step-body")
    transcript = body.locator("[data-transcript]").first
    transcript.wait_for()
    roles = transcript.locator(".step-role").all_inner_texts()
    assert [role.lower() for role in roles] == ["system", "user", "assistant", "tool"]
    assert transcript.locator(".step-text").nth(1).inner_text() == "Where is order 1042?"
    call = transcript.locator(".step-call").first
    assert "order_lookup" in call.inner_text() and '"order": 1042' in call.inner_text()
    assert '"status": "shipped"' in transcript.locator(".step-call").nth(1).inner_text()
    output = body.locator("[data-transcript]").nth(1)
    assert output.locator(".step-text").inner_text() == "It has shipped."
    # The JSON is a click away, its first levels open: the message's fields visible at once.
    body.locator(".as-json > summary").first.click()
    tree = body.locator(".as-json .json-tree").first
    tree.get_by_text("You answer about orders.").wait_for(state="visible")
