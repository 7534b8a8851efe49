"""A step recorded long after its run ended does not flatten the run's waterfall, and
durations read as people say them (issue 38, defect 3)."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.activity.models import RunStep
from tests.activity.factories import conversation_factory, run_factory

pytestmark = pytest.mark.django_db(transaction=True)
T0 = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def _step(run, step_id, *, parent=None, start_ms=0, duration_ms=100, **fields):
    return RunStep.objects.create(
        agent_id=run.agent_id, run_id=run.id, id=step_id, parent_id=parent,
        name=fields.pop("name", step_id), started_at=T0 + timedelta(milliseconds=start_ms),
        ended_at=T0 + timedelta(milliseconds=start_ms + duration_ms), duration_ms=duration_ms,
        created_at=T0, updated_at=T0, **fields,
    )  # fmt: skip


def test_a_late_step_gets_its_own_lane(console_page, agent):
    page = console_page
    conversation = conversation_factory(agent=agent, id="conv_late")
    run = run_factory(
        agent=agent, conversation=conversation, id="run_late", created_at=T0,
        first_chunk_at=T0 + timedelta(seconds=1), completed_at=T0 + timedelta(seconds=3),
        total_turn_latency_ms=3000.0,
    )  # fmt: skip
    _step(run, "st_root", kind="agent", name="invoke_agent support", duration_ms=3000)
    _step(run, "st_model", parent="st_root", kind="model", start_ms=100, duration_ms=1900)
    _step(run, "st_tool", parent="st_root", kind="tool", start_ms=2000, duration_ms=900)
    # A search naming the run, 16 min 50 s after it ended.
    _step(run, "st_late", kind="retrieval", name="search", start_ms=3000 + 1_010_000,
          duration_ms=345, query="steel")  # fmt: skip

    page.goto(f"{page.live_server_url}/runs/{run.id}/")
    main = page.locator("#trace .trace-row")
    assert main.count() == 3
    late = page.locator("#trace-late .trace-row")
    assert late.count() == 1
    assert late.first.get_attribute("data-step-id") == "st_late"
    summary = page.locator(".trace-card > p").first.inner_text()
    assert "3.0 s" in summary and "1010" not in summary and "ms" not in summary
    assert "16 min 50 s" in page.locator("#trace-late-title").inner_text()
    # The model step took most of the run: its bar is most of the bar's track, not a sliver.
    bar = page.locator('#trace .trace-row[data-step-id="st_model"] .step-bar')
    rect = bar.locator("rect").bounding_box()
    track = bar.bounding_box()
    assert rect["width"] > 0.5 * track["width"]
    # Durations on rows and in the Timing card read in seconds, not thousands of ms.
    assert "1.9 s" in page.locator('[data-step-id="st_model"] .step-duration').inner_text()
    assert "3.0 s" in page.locator(".card", has_text="Turn latency").first.inner_text()
