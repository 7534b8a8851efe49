"""Every list page at both sizes (issue 26, item 1), in Chromium.

At 390 × 844 a table row is a card: each row's status and every action are visible inside the
screen, with no horizontal scrolling of the page or of the table's card. At 1440 × 900 no table
scrolls inside its card and no cell's content is cut off.
"""

import pytest
from django.utils import timezone

from apps.knowledge.models import KnowledgeDocument
from apps.tools.models import McpServer
from apps.workspaces.services import invitation_create
from tests.activity.factories import conversation_factory, end_user_factory, run_factory
from tests.browser.conftest import settle
from tests.factories import api_key_factory, membership_factory, user_factory
from tests.knowledge.conftest import make_file_document
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


@pytest.fixture
def filled(agent, owner, sibling_agent):
    """Rows on every list page, with long values where real ones are long."""
    user = end_user_factory(
        agent=agent,
        display_name="Maximiliana Oberhollenzer-Wittgenstein",
        email="maximiliana.oberhollenzer-wittgenstein@example-enterprise.com",
        external_id="crm-contact-0000000000000000001234567",
    )
    conversation = conversation_factory(
        agent=agent, user=user, title="Refund for a damaged parcel delivered to the wrong address"
    )
    for status, tools, failed, error in (
        ("completed", ["search_knowledge", "lookup_order"], [], None),
        (
            "failed",
            ["create_ticket", "search_knowledge", "web_search"],
            ["web_search"],
            "tool_error",
        ),
        ("streaming", [], [], None),
    ):
        run_factory(
            conversation=conversation,
            user=user,
            status=status,
            model_id="claude-sonnet-4-5-20250929",
            effort="high",
            tool_names=tools,
            failed_tool_names=failed,
            error_code=error,
            total_tokens=1234567,
            credits_charged=12345.678,
        )
    make_file_document(
        agent, b"# Opening hours\n\nNine to five.", "opening-hours-and-holiday-schedule.md"
    )
    failed_doc = make_file_document(agent, b"%PDF-1.4 broken", "scanned-contract-2024-final-v3.pdf")
    assert failed_doc.status == "failed"
    KnowledgeDocument.objects.filter(pk=failed_doc.pk).update(
        error_message="The file is damaged or not really of its type; nothing could be read."
    )
    processing = make_file_document(agent, b"Later", "processing.txt", ingest=False)
    assert processing.status == "processing"
    webhook = webhook_factory(agent=agent)
    delivery_factory(
        webhook=webhook,
        status="failed",
        next_attempt_at=None,
        error_message="The endpoint answered 503 Service Unavailable.",
        response_status=503,
        attempts=7,
    )
    delivery_factory(webhook=webhook, status="succeeded", next_attempt_at=None, response_status=200)
    delivery_factory(webhook=webhook, next_attempt_at=timezone.now() + timezone.timedelta(hours=2))
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name="Reporting job")
    McpServer.objects.create(
        agent=agent,
        name="Weather and forecasts for the whole world",
        url="https://tools.example.com/mcp/weather/v2/streamable-http",
        status="failed",
        error_message="The server did not answer the MCP handshake within 10 s.",
    )
    teammate = user_factory(
        email="konstantin.papadopoulos-vanderbilt@example-enterprise.com",
        first_name="Konstantin",
        last_name="Papadopoulos-Vanderbilt",
    )
    membership_factory(workspace=agent.workspace, user=teammate)
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=teammate, name="Their job")
    invitation_create(
        workspace=agent.workspace,
        by_user=owner,
        role="member",
        email="bartholomew.featherstonehaugh@example-enterprise.com",
        site_url="http://testserver",
    )
    invitation_create(workspace=agent.workspace, by_user=owner, role="owner", site_url="x")
    return {"user": user}


def _pages(filled) -> list[str]:
    return [
        "/overview/",
        "/conversations/",
        "/users/",
        f"/users/{filled['user'].id}/",
        "/runs/",
        "/usage/",
        "/knowledge/",
        "/tools/",
        "/webhooks/",
        "/agents/",
        "/api-keys/",
        "/connected-apps/",
        "/team/",
        "/audit-log/",
    ]


# For each table of the page: is it inside its card without scrolling, and is any cell's content
# cut off? (A `.clip` name is shortened on purpose, whole in its title: it is not a cut.)
DESKTOP_CHECK = """
() => {
  const problems = [];
  if (document.documentElement.scrollWidth > window.innerWidth) problems.push("page scrolls");
  for (const table of document.querySelectorAll("table.table")) {
    const box = table.closest(".card") || table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1)
      problems.push(`table in ${box.id || box.className} scrolls: ${box.scrollWidth} > ${box.clientWidth}`);
    for (const cell of table.querySelectorAll("th, td")) {
      if (cell.scrollWidth > cell.clientWidth + 1)
        problems.push(`cell cut: ${cell.textContent.trim().slice(0, 40)}`);
      const right = cell.getBoundingClientRect().right;
      if (right > box.getBoundingClientRect().right + 1)
        problems.push(`cell outside its card: ${cell.textContent.trim().slice(0, 40)}`);
    }
    for (const clip of table.querySelectorAll(".clip"))
      if (clip.scrollWidth > clip.clientWidth && !clip.title) problems.push("clipped without title");
  }
  return problems;
}
"""

# Each row of each list table: its status badges and its actions (buttons, links styled as
# buttons, selects) are displayed, inside the screen and inside the card.
PHONE_CHECK = """
() => {
  const problems = [];
  const width = window.innerWidth;
  if (document.documentElement.scrollWidth > width) problems.push("page scrolls sideways");
  let rows = 0;
  for (const table of document.querySelectorAll("table.table")) {
    const box = table.closest(".card") || table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1) problems.push(`card of a table scrolls: ${box.id}`);
    const card = box.getBoundingClientRect();
    for (const row of table.querySelectorAll("tbody tr")) {
      if (row.offsetParent === null) continue;  // an empty, folded row (attempts)
      rows += 1;
      const wanted = row.querySelectorAll(".badge, [data-status], button, a.btn, select");
      for (const element of wanted) {
        if (element.closest("[hidden], noscript")) continue;
        const style = getComputedStyle(element);
        if (style.display === "none" || style.visibility === "hidden") {
          problems.push(`hidden on phones: ${element.textContent.trim().slice(0, 30)}`);
          continue;
        }
        const rect = element.getBoundingClientRect();
        if (rect.width === 0 || rect.left < card.left - 1 || rect.right > Math.min(card.right, width) + 1)
          problems.push(`not visible in its row: ${element.textContent.trim().slice(0, 30)} (${Math.round(rect.left)}..${Math.round(rect.right)})`);
      }
      // A card shows what each value is. (Bar-chart tables stay small tables on phones.)
      if (table.classList.contains("hbars")) continue;
      for (const cell of row.querySelectorAll("td")) {
        if (cell.textContent.trim() && !cell.dataset.label && !cell.hasAttribute("colspan"))
          problems.push(`cell without data-label: ${cell.textContent.trim().slice(0, 30)}`);
      }
    }
  }
  return {problems, rows};
}
"""


def test_no_table_cell_is_cut_off_at_1440(console_page, filled):
    page = console_page
    page.set_viewport_size(DESKTOP)
    found = {}
    for path in _pages(filled):
        page.goto(f"{page.live_server_url}{path}")
        settle(page)
        problems = page.evaluate(DESKTOP_CHECK)
        if problems:
            found[path] = problems
    assert found == {}, "\n".join(f"{path}: {problems}" for path, problems in found.items())


def test_rows_are_cards_with_their_status_and_actions_at_390(console_page, filled):
    page = console_page
    page.set_viewport_size(PHONE)
    found, rows = {}, {}
    for path in _pages(filled):
        page.goto(f"{page.live_server_url}{path}")
        settle(page)
        result = page.evaluate(PHONE_CHECK)
        rows[path] = result["rows"]
        if result["problems"]:
            found[path] = result["problems"]
    assert found == {}, "\n".join(f"{path}: {problems}" for path, problems in found.items())
    # The walk saw the rows it was meant to judge.
    for path in (
        "/conversations/",
        "/users/",
        "/runs/",
        "/knowledge/",
        "/webhooks/",
        "/tools/",
        "/team/",
        "/audit-log/",
    ):
        assert rows[path] > 0, path


def test_a_failed_documents_status_and_delete_are_on_screen_at_390(console_page, filled):
    """The issue's example: on Knowledge, a document's "Failed" and its Disable/Delete."""
    page = console_page
    page.set_viewport_size(PHONE)
    page.goto(f"{page.live_server_url}/knowledge/")
    row = page.locator("tr.document-row", has=page.locator("[data-status='failed']"))
    for target in (
        row.locator("[data-status='failed']"),
        row.get_by_role("button", name="Delete"),
        row.locator(".toggle-button"),
    ):
        target.scroll_into_view_if_needed()
        box = target.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
