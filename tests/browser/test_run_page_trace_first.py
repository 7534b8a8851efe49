"""The run page puts the trace first, with the totals in one line above it, and a step's
input opens as a JSON tree with its first levels open (issue 38, defect 8)."""

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
        input=[{"role": "user", "content": "Where is order 1042?"}],
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
    # The message's own fields are visible without opening anything more.
    page.locator(".step-body").get_by_text("Where is order 1042?").wait_for(state="visible")
