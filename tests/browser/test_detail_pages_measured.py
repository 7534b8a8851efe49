"""The detail pages measured as the lists are (issue 38, "Measured, not eyeballed"): axe-core
finds no serious or critical violation at 1440 and 390 px, and at 390 px no text is wider
than its control, every tap target is at least 24 x 24 px and no status or action is off the
screen; as an owner and as a member (who is not shown the owners' pages)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.activity.models import RunStep
from apps.tools.models import McpServer
from apps.webhooks.models import WebhookAttempt
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.browser.conftest import log_in, settle
from tests.browser.test_accessibility import AXE, RUN_AXE
from tests.browser.test_phone_layout import MEASURE
from tests.knowledge.conftest import make_file_document
from tests.knowledge.gap_helpers import gap_factory
from tests.scores.factories import score_config_factory, score_factory
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def details(agent, owner, settings, tmp_path):
    """One of each detail page's object; (path, owners only) of each page."""
    settings.MEDIA_ROOT = tmp_path / "media"
    now = timezone.now()
    user = end_user_factory(agent=agent, display_name="Ada Lovelace", email="ada@example.org")
    conversation = conversation_factory(agent=agent, user=user, title="Where is my order?")
    message_factory(conversation=conversation, role="user")
    answer = message_factory(conversation=conversation, role="assistant")
    run = run_factory(conversation=conversation, user=user, created_at=now - timedelta(seconds=3))
    RunStep.objects.create(
        agent_id=agent.pk, run_id=run.id, id="st_chat", name="chat", kind="model",
        started_at=run.created_at, ended_at=run.created_at + timedelta(seconds=1),
        duration_ms=1000, created_at=now, updated_at=now,
        input=[{"role": "user", "content": "Where is order 1042?"}],
        output={"text": "It has shipped."},
    )  # fmt: skip
    score_config_factory(agent=agent, name="quality")
    score_factory(agent=agent, run=run)
    score_factory(agent=agent, message=answer)
    document = make_file_document(agent, b"# Steel\n\nGrades.\n", "Steel JIS comparison.md")
    server = McpServer.objects.create(
        agent=agent, name="Orders", url="https://orders.example.com/mcp", status="connected",
        enabled=True, tool_count=0,
    )  # fmt: skip
    gap = gap_factory(agent)
    webhook = webhook_factory(agent=agent)
    delivery = delivery_factory(webhook=webhook, run_id=run.id, status="failed", attempts=1)
    WebhookAttempt.objects.create(
        delivery=delivery, attempt=1, retry=0, kind="auto", status="failed",
        response_status=503, error_message="The endpoint answered 503 Service Unavailable.",
        response_body="down", response_headers=[["Retry-After", "30"]], duration_ms=40.0,
        started_at=now, finished_at=now,
    )  # fmt: skip
    return [
        (f"/runs/{run.id}/", False),
        (f"/runs/{run.id}/steps/st_chat/", False),
        (f"/conversations/{conversation.id}/", False),
        (f"/users/{user.id}/", False),
        (f"/knowledge/{document.pk}/", False),
        (f"/knowledge/unanswered/{gap.pk}/", False),
        (f"/tools/{server.pk}/", False),
        (f"/agents/{agent.pk}/", False),
        ("/scores/", False),
        ("/knowledge/unanswered/", False),
        ("/webhooks/", True),
        (f"/webhooks/deliveries/{delivery.pk}/", True),
    ]


@pytest.mark.parametrize("role", ["owner", "member"])
def test_detail_pages_pass_axe_and_fit_a_phone(browser, live_server, details, owner, member, role):
    if not AXE.exists():
        pytest.fail("axe-core missing: bash scripts/install_node_packages.sh")
    user = owner if role == "owner" else member
    context = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = context.new_page()
    log_in(page, live_server, user)
    found = {}
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
        for path, owners_only in details:
            if owners_only and role == "member":
                continue
            response = page.goto(f"{live_server.url}{path}")
            assert response.status == 200, path
            settle(page)
            page.add_script_tag(path=str(AXE))
            problems = {"axe": page.evaluate(RUN_AXE)}
            if width == 390:
                problems.update(page.evaluate(MEASURE))
            problems = {name: items for name, items in problems.items() if items}
            if problems:
                found[f"{width} {path}"] = problems
    context.close()
    assert found == {}, json.dumps(found, indent=1)
