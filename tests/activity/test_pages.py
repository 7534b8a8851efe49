"""Console pages: each renders for a member, filters and pages with and without HTMX, and
tenancy holds (another Agent's conversation is a 404 page)."""

from datetime import UTC, datetime, timedelta
from urllib.parse import urljoin

import pytest
from django.urls import reverse

from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, tzinfo=UTC)


@pytest.fixture
def signed_in(client, owner, agent):
    client.force_login(owner)
    return client


@pytest.fixture
def activity(agent):
    user = end_user_factory(agent=agent, display_name="Ada Lovelace")
    conversation = conversation_factory(agent=agent, user=user, title="Refund for order 1042")
    message_factory(
        conversation=conversation, parts=[{"type": "text", "text": "Where is **my** refund?"}]
    )
    message_factory(
        conversation=conversation,
        role="assistant",
        parts=[
            {"type": "step-start"},
            {"type": "reasoning", "text": "Look up the order first."},
            {"type": "tool-lookup_order", "toolCallId": "call_1", "state": "output-available",
             "input": {"order": 1042}, "output": {"status": "refunded"}},
            {"type": "tool-create_ticket", "toolCallId": "call_2", "state": "output-error",
             "input": {}, "errorText": "Upstream 503"},
            {"type": "text", "text": "It was refunded."},
            {"type": "file", "mediaType": "application/pdf", "filename": "receipt.pdf",
             "url": "https://files.example.com/receipt.pdf"},
            {"type": "source-url", "sourceId": "s1", "url": "https://help.example.com/refunds",
             "title": "Refund policy"},
            {"type": "data-weather", "data": {"celsius": 19}},
        ],
        created_at=T0 + timedelta(days=400),
    )  # fmt: skip
    run = run_factory(
        agent=agent, conversation=conversation, status="failed", error_code="provider_timeout",
        tool_names=["lookup_order", "create_ticket"], failed_tool_names=["create_ticket"],
    )  # fmt: skip
    return {"user": user, "conversation": conversation, "run": run}


@pytest.mark.smoke
@pytest.mark.parametrize("name", ["overview", "conversation_list", "user_list", "run_list"])
def test_list_pages_render_for_a_member(client, member, activity, name):
    client.force_login(member)
    response = client.get(reverse(f"activity:{name}"))
    assert response.status_code == 200
    assert b"<nav" in response.content


def test_pages_need_a_login(client):
    response = client.get(reverse("activity:run_list"))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_overview_counts_runs_and_tools(signed_in, activity):
    response = signed_in.get(reverse("activity:overview"), {"days": "7"})
    html = response.content.decode()
    assert 'id="stat-runs">1<' in html
    assert "lookup_order" in html and "create_ticket" in html
    assert "<svg" in html and "<title>" in html


def test_overview_period_swap_returns_only_the_chart_region(signed_in, activity):
    response = signed_in.get(
        reverse("activity:overview"),
        {"days": "90"},
        headers={"HX-Request": "true", "HX-Target": "overview-charts"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="overview-charts" data-days="90"')
    assert "<html" not in html


def test_conversation_list_search_and_filters(signed_in, agent, activity):
    conversation_factory(agent=agent, title="Shipping to Norway", status="failed", source="preview")
    url = reverse("activity:conversation_list")
    html = signed_in.get(url, {"q": "refund"}).content.decode()
    assert "Refund for order 1042" in html and "Shipping to Norway" not in html
    html = signed_in.get(url, {"status": "failed"}).content.decode()
    assert "Shipping to Norway" in html and "Refund for order 1042" not in html
    html = signed_in.get(url, {"user_id": activity["user"].id}).content.decode()
    assert "Refund for order 1042" in html and "Shipping to Norway" not in html
    html = signed_in.get(url, {"to": "2000-01-01"}).content.decode()
    assert "No conversations match" in html


def test_conversation_list_htmx_returns_the_table_partial(signed_in, activity):
    response = signed_in.get(
        reverse("activity:conversation_list"),
        {"q": "refund"},
        headers={"HX-Request": "true", "HX-Target": "conversation-table"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="conversation-table">')
    assert "Refund for order 1042" in html


def test_bad_filter_shows_its_message_instead_of_failing(signed_in, activity):
    response = signed_in.get(reverse("activity:conversation_list"), {"status": "nope", "from": "x"})
    assert response.status_code == 200
    assert "form-error" in response.content.decode()
    response = signed_in.get(reverse("activity:run_list"), {"after": "forged"})
    assert "no longer valid" in response.content.decode()


def test_conversation_list_pages_with_older_links(signed_in, agent):
    for i in range(30):
        conversation_factory(
            agent=agent, title=f"Chat {i:02d}", updated_at=T0 + timedelta(minutes=i)
        )
    first = signed_in.get(reverse("activity:conversation_list")).content.decode()
    assert "Chat 29" in first and "Chat 04" not in first
    start = first.index('id="older-link" href="') + len('id="older-link" href="')
    href = first[start : first.index('"', start)].replace("&amp;", "&")
    second = signed_in.get(urljoin(reverse("activity:conversation_list"), href)).content.decode()
    assert "Chat 04" in second and "Chat 29" not in second


def test_transcript_renders_parts_by_type(signed_in, activity):
    url = reverse("activity:conversation_detail", args=[activity["conversation"].id])
    html = signed_in.get(url).content.decode()
    assert "<strong>my</strong>" in html  # markdown
    assert '<details class="part part-reasoning">' in html
    assert "<code>lookup_order</code>" in html
    assert "&quot;order&quot;: 1042" in html  # tool input as pretty JSON
    assert "part-failed" in html and "Upstream 503" in html
    assert 'href="https://files.example.com/receipt.pdf"' in html
    assert 'href="https://help.example.com/refunds"' in html
    assert '<hr class="part-step">' in html
    assert "data-weather" in html and "&quot;celsius&quot;: 19" in html
    assert "provider_timeout" in html  # runs beside the transcript
    assert 'class="toasts"' not in html  # the transcript is not mistaken for flash messages


def test_another_agents_conversation_is_a_404_page(signed_in, other_agent):
    theirs = conversation_factory(agent=other_agent)
    response = signed_in.get(reverse("activity:conversation_detail", args=[theirs.id]))
    assert response.status_code == 404
    run = run_factory(agent=other_agent)
    assert signed_in.get(reverse("activity:run_detail", args=[run.id])).status_code == 404
    user = end_user_factory(agent=other_agent)
    assert signed_in.get(reverse("activity:user_detail", args=[user.id])).status_code == 404


def test_user_and_run_detail_pages(signed_in, activity):
    html = signed_in.get(
        reverse("activity:user_detail", args=[activity["user"].id])
    ).content.decode()
    assert "Ada Lovelace" in html and "Refund for order 1042" in html
    html = signed_in.get(reverse("activity:run_detail", args=[activity["run"].id])).content.decode()
    assert "provider_timeout" in html and "chip chip-bad" in html


def test_run_list_filters_by_status(signed_in, agent, activity):
    ok = run_factory(agent=agent, status="completed", request_id="req-ok")
    html = signed_in.get(reverse("activity:run_list"), {"status": "completed"}).content.decode()
    assert ok.id[:18] in html and activity["run"].id[:18] not in html


def test_run_page_shows_timing_as_offsets_from_the_start(signed_in, agent):
    conversation = conversation_factory(agent=agent)
    started = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    run = run_factory(
        agent=agent,
        conversation=conversation,
        created_at=started,
        first_chunk_at=started + timedelta(milliseconds=1693),
        completed_at=started + timedelta(seconds=16, milliseconds=145),
    )
    html = signed_in.get(reverse("activity:run_detail", args=[run.id])).content.decode()
    assert "2026-03-01 12:00:00 UTC" in html
    assert "+1.7 s" in html
    assert "+16.1 s" in html


def test_users_are_searchable_by_name_email_or_external_id(signed_in, agent):
    ada = end_user_factory(agent=agent, display_name="Ada Lovelace", email="ada@example.org")
    end_user_factory(agent=agent, display_name="Grace Hopper", email="grace@navy.example")

    for query in ("lovelace", "ADA@EXAMPLE", ada.external_id):
        html = signed_in.get(reverse("activity:user_list"), {"q": query}).content.decode()
        assert "Ada Lovelace" in html and "Grace Hopper" not in html, query


def test_runs_filter_by_model_and_error_code_with_suggestions(signed_in, agent):
    wanted = run_factory(agent=agent, model_id="small-model", status="failed", error_code="timeout")
    run_factory(agent=agent, model_id="small-model", status="completed")
    run_factory(agent=agent, model_id="large-model", status="failed", error_code="rate_limited")

    page = signed_in.get(reverse("activity:run_list"), {"error_code": "timeout"})
    html = page.content.decode()
    table = html.split('id="run-table"', 1)[1]
    assert wanted.id in table and table.count("<tr>") == 1 + 1  # the header row and one run
    assert '<option value="large-model">' in html and '<option value="rate_limited">' in html

    both = signed_in.get(reverse("activity:run_list"), {"model_id": "large-model"})
    assert wanted.id not in both.content.decode()
