"""The console's Performance page (the analytics rollup as a table, a latency chart per row,
links to the runs behind each row and day) and the run dimensions in the console lists."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    return client


def _record(make_api) -> None:
    today = timezone.now().replace(microsecond=0)
    at = (today - timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    records = [
        {"type": "conversation", "id": "conv_1", "created_at": at},
        {"type": "run", "id": "run_1", "conversation_id": "conv_1", "request_id": "r1",
         "sdk_version": "5", "created_at": at, "environment": "production", "release": "1.4.2",
         "tags": ["vip"], "metadata": {"tier": "gold"}, "status": "failed",
         "total_turn_latency_ms": 2500},
        {"type": "conversation", "id": "conv_2", "created_at": at},
        {"type": "run", "id": "run_2", "conversation_id": "conv_2", "request_id": "r2",
         "sdk_version": "5", "created_at": at, "environment": "staging"},
    ]  # fmt: skip
    for n in range(4):
        records.append(
            {"type": "step", "id": f"s{n}", "run_id": "run_1", "kind": "tool",
             "name": "execute_tool refund", "tool_name": "refund", "started_at": at,
             "duration_ms": 1000 * (n + 1), "status": "failed" if n == 0 else "completed"}
        )  # fmt: skip
    assert make_api().post("/v1/ingest", json=records).status == 200


def test_performance_page_lists_each_tool_with_its_figures_and_links(signed_in, make_api, agent):
    _record(make_api)
    html = signed_in.get(reverse("activity:performance"), {"group": "tool"}).content.decode()
    assert "refund" in html and ">4<" in html and "25.0 %" in html
    assert "tool_name=refund" in html and "failed_tool=refund" in html
    assert html.count("<svg") >= 1  # the row's chart
    html = signed_in.get(reverse("activity:performance"), {"group": "environment"}).content
    html = html.decode()
    assert "production" in html and "staging" in html and "environment=production" in html
    # An unknown group or period falls back to the defaults instead of failing.
    assert (
        signed_in.get(reverse("activity:performance"), {"group": "x", "days": "x"}).status_code
        == 200
    )


def test_console_lists_filter_by_the_run_dimensions(signed_in, make_api):
    _record(make_api)
    runs = reverse("activity:run_list")
    html = signed_in.get(runs, {"environment": "production"}).content.decode()
    assert "run_1" in html and "run_2" not in html
    html = signed_in.get(runs, {"metadata": "tier:gold", "tag": "vip"}).content.decode()
    assert "run_1" in html and "run_2" not in html
    html = signed_in.get(runs, {"metadata": "tier"}).content.decode()
    assert "must be key:value" in html
    conversations = reverse("activity:conversation_list")
    html = signed_in.get(conversations, {"release": "1.4.2"}).content.decode()
    assert "conv_1" in html and "conv_2" not in html
    run_page = signed_in.get(reverse("activity:run_detail", args=["run_1"])).content.decode()
    assert "?environment=production" in run_page and "?tag=vip" in run_page
    assert "?metadata=tier:gold" in run_page
