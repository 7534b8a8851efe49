"""The Usage page: figures from the rollup, the period picker (full page and HTMX partial),
limit banners, the owner-only limit form and the streamed CSV export."""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from apps.workspaces.models import Workspace
from tests.usage.helpers import record_run

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)
HTMX = {"HX-Request": "true", "HX-Target": "usage-report"}


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(NOW, tick=False)


def test_page_shows_this_months_workspace_usage_and_lights_the_nav(
    owner_client, agent, sibling_agent
):
    record_run(agent, at=NOW, credits_charged=2.5, total_tokens=1200)
    record_run(sibling_agent, at=datetime(2026, 5, 2, tzinfo=UTC), credits_charged=1.0)
    record_run(agent, at=datetime(2026, 4, 30, tzinfo=UTC), credits_charged=50.0)  # April
    response = owner_client.get("/usage/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-current="page">Usage<' in html
    assert 'id="stat-runs">2<' in html
    assert 'id="stat-credits">3.50<' in html
    assert html.count('<tr data-agent-id="') == 2
    assert '<svg class="chart"' in html and "2026-05-20: 2.50 credits" in html
    assert 'id="no-limit"' in html


def test_the_period_picker_swaps_only_the_report(owner_client, agent):
    record_run(agent, at=datetime(2026, 4, 30, tzinfo=UTC))
    response = owner_client.get("/usage/?period=last_month", headers=HTMX)
    html = response.content.decode().strip()
    assert response.status_code == 200
    assert html.startswith('<div id="usage-report" data-from="2026-04-01" data-to="2026-04-30"')
    assert 'id="stat-runs">1<' in html and "<html" not in html


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("period=7d", "2026-05-14", "2026-05-20"),
        ("period=30d", "2026-04-21", "2026-05-20"),
        ("period=90d", "2026-02-20", "2026-05-20"),
        ("period=this_month", "2026-05-01", "2026-05-31"),
        ("period=custom&from=2026-01-05&to=2026-02-10", "2026-01-05", "2026-02-10"),
        ("period=nonsense", "2026-05-01", "2026-05-31"),
    ],
)
def test_periods(owner_client, query, start, end):
    html = owner_client.get(f"/usage/?{query}", headers=HTMX).content.decode()
    assert f'data-from="{start}" data-to="{end}"' in html


def test_a_bad_custom_range_says_why_and_shows_this_month(owner_client):
    response = owner_client.get("/usage/?period=custom&from=2026-05-10&to=2026-05-01")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="period-error"' in html and "From:" in html
    assert 'data-from="2026-05-01"' in html


def test_banners_follow_the_limit(owner_client, agent, workspace):
    Workspace.objects.filter(pk=workspace.pk).update(monthly_credit_limit=Decimal(10))
    record_run(agent, at=NOW, credits_charged=8.0)
    html = owner_client.get("/usage/").content.decode()
    assert 'card-warning" id="limit-banner" role="status" data-state="warning"' in html
    record_run(agent, at=NOW, credits_charged=2.0)
    html = owner_client.get("/usage/").content.decode()
    assert 'card-danger" id="limit-banner" role="alert" data-state="exceeded"' in html
    assert 'class="limit-line"' in html


def test_an_owner_sets_and_clears_the_limit(owner_client, workspace):
    response = owner_client.post("/usage/limit/", {"monthly_credit_limit": "1,250.5"})
    assert response.status_code == 302 and response["Location"] == "/usage/"
    workspace.refresh_from_db()
    assert workspace.monthly_credit_limit == Decimal("1250.50")
    owner_client.post("/usage/limit/", {"monthly_credit_limit": ""})
    workspace.refresh_from_db()
    assert workspace.monthly_credit_limit is None


def test_a_bad_limit_is_a_form_error_and_changes_nothing(owner_client, workspace):
    response = owner_client.post("/usage/limit/", {"monthly_credit_limit": "-3"})
    assert response.status_code == 400
    assert "Must be more than 0" in response.content.decode()
    workspace.refresh_from_db()
    assert workspace.monthly_credit_limit is None


def test_members_see_usage_but_cannot_set_the_limit(member_client, workspace):
    html = member_client.get("/usage/").content.decode()
    assert 'id="owner-only"' in html and 'id="credit-limit-form"' not in html
    assert member_client.post("/usage/limit/", {"monthly_credit_limit": "5"}).status_code == 403
    workspace.refresh_from_db()
    assert workspace.monthly_credit_limit is None


def test_csv_export_streams_one_row_per_day_and_agent(owner_client, agent, sibling_agent):
    sibling_agent.name = "=HYPERLINK(evil)"
    sibling_agent.save(update_fields=["name"])
    record_run(agent, at=NOW, credits_charged=0.1, total_turn_latency_ms=2400.0)
    record_run(agent, at=NOW, credits_charged=0.2, total_turn_latency_ms=2400.0)
    record_run(sibling_agent, at=datetime(2026, 5, 3, 8, tzinfo=UTC), credits_charged=1.0)
    response = owner_client.get("/usage/export.csv?period=this_month")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "usage-2026-05-01-2026-05-31.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:4] == ["date", "agent_id", "agent_name", "runs"]
    assert [(r[0], r[1], r[2], r[3], r[13]) for r in rows[1:]] == [
        ("2026-05-03", sibling_agent.pk, "'=HYPERLINK(evil)", "1", "1"),
        ("2026-05-20", agent.pk, "Support Agent", "2", "0.3"),
    ]
    assert float(rows[2][14]) == pytest.approx(2400, rel=0.045)


def test_signed_out_visitors_go_to_the_login(client):
    assert client.get("/usage/").status_code == 302
