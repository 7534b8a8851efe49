"""Every keyset-paged list page has the same controls and they work (issue 26, item 5), in
Chromium: a total count above the table; sort headers that, clicked or reached with the keyboard
and Enter, order the rows, say so with `aria-sort`, and keep the order on the next page; a
filter that narrows the rows and the count; and the same pager (« First page, ← Previous,
Next →) that walks forward and back to the same rows.

Each list gets 30 rows (a page is 25) whose values make the expected order known in advance:
the test reads the rows' keys off the screen and compares them with that order.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from oauth2_provider.models import get_application_model

from apps.knowledge.models import KnowledgeDocument
from apps.mcp_server.models import ConnectedApplication
from apps.tools.models import McpServer
from apps.workspaces.models import ApiKey, AuditEvent, Membership
from tests.activity.factories import conversation_factory, end_user_factory, run_factory
from tests.browser.conftest import settle
from tests.factories import agent_factory, api_key_factory, membership_factory, user_factory
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 30
PAGE = 25
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# Insertion order differs from every sorted order, so no order is right by accident.
SHUFFLED = [(n * 7) % ROWS for n in range(ROWS)]


@dataclass(frozen=True)
class ListPage:
    path: str
    table: str  # the DOM id of the region the list's controls swap
    noun: str  # the count's word ("30 users")
    column: str  # the header the test clicks
    key: str  # JS: a row element -> the text the order is judged by
    expected: list[str]  # every row's key in the order the click asks for
    filter_control: str  # a <select> (or, with `search`, a search box) of the filter form
    filter_value: str
    filtered: int  # rows left by the filter
    search: bool = False


def _connect(agent, user, n: int) -> None:
    """A connected application named `App nn`, disconnected when n % 5 == 0."""
    application = get_application_model().objects.create(
        name=f"App {n:02d}",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/callback",
    )
    grant_key, _ = api_key_factory(agent=agent, scopes=["runs:read"], name=f"grant {n}")
    ApiKey.objects.filter(pk=grant_key.pk).update(kind=ApiKey.Kind.CONNECTED_APP)
    connection = ConnectedApplication.objects.create(
        agent=agent, application=application, user=user, grant_key=grant_key
    )
    ConnectedApplication.objects.filter(pk=connection.pk).update(
        created_at=T0 + timedelta(minutes=n), revoked_at=T0 if n % 5 == 0 else None
    )


def _people_and_log(agent, owner) -> None:
    """The Team page's members and the Audit log page's entries: 30 of each, with an owner
    every third member and a revocation every fifth entry. The log holds only these."""
    workspace = agent.workspace
    for n in SHUFFLED:
        person = user_factory(
            email=f"person{n:02d}@example.com", first_name="Person", last_name=f"{n:02d}"
        )
        membership = membership_factory(
            workspace=workspace, user=person, role="owner" if n % 3 == 0 else "member"
        )
        Membership.objects.filter(pk=membership.pk).update(created_at=T0 + timedelta(hours=n))
    AuditEvent.objects.filter(workspace=workspace).delete()
    AuditEvent.objects.bulk_create(
        AuditEvent(
            workspace=workspace,
            action="api_key.revoked" if n % 5 == 0 else "document.created",
            actor_type="user",
            actor_id=f"person{n:02d}@example.com",
            actor_name=f"Person {n:02d}",
            target_type="api_key" if n % 5 == 0 else "document",
            target_id=f"target_{n:02d}",
            created_at=T0 + timedelta(minutes=n),
        )
        for n in SHUFFLED
    )


def _fill(agent, owner) -> list[ListPage]:
    # The runs' conversation, started last of all.
    conversation = conversation_factory(
        agent=agent, title=f"Chat {ROWS}", status="completed", created_at=T0, updated_at=T0
    )
    webhook = webhook_factory(agent=agent)
    for n in SHUFFLED:
        end_user_factory(
            agent=agent,
            display_name=f"Person {n:02d}",
            identity_type="anonymous" if n % 3 == 0 else "user",
            last_seen_at=T0 + timedelta(minutes=n),
        )
        document = KnowledgeDocument.objects.create(
            agent=agent,
            name=f"doc-{n:02d}.md",
            source_type="file",
            file_name=f"doc-{n:02d}.md",
            file_size_bytes=100 + n,
            content_sha256=f"{n:064d}",
            status="failed" if n % 5 == 0 else "ready",
            error_message="Unreadable." if n % 5 == 0 else None,
        )
        KnowledgeDocument.objects.filter(pk=document.pk).update(created_at=T0 + timedelta(hours=n))
        delivery_factory(
            webhook=webhook,
            status="failed" if n % 4 == 0 else "succeeded",
            attempts=n,
            next_attempt_at=None,
            created_at=T0 + timedelta(minutes=ROWS - n),
        )
        run_factory(
            conversation=conversation,
            total_tokens=1000 + n,
            status="failed" if n % 6 == 0 else "completed",
            created_at=T0 + timedelta(seconds=n),
        )
        conversation_factory(
            agent=agent,
            title=f"Chat {n:02d}",
            status="failed" if n % 10 == 0 else "completed",
            created_at=T0 - timedelta(days=1, minutes=ROWS - n),
            updated_at=T0 + timedelta(days=1, minutes=ROWS - n),  # the reverse of created
        )
        key, _ = api_key_factory(agent=agent, scopes=["runs:read"], name=f"Key {n:02d}")
        ApiKey.objects.filter(pk=key.pk).update(
            created_at=T0 + timedelta(minutes=n), revoked_at=T0 if n % 3 == 0 else None
        )
        _connect(agent, owner, n)
        agent_factory(workspace=agent.workspace, name=f"Bot-{n:02d}")
        McpServer.objects.create(
            agent=agent,
            name=f"Server {n:02d}",
            url=f"https://tools-{n}.example.com/mcp",
            status="failed" if n % 5 == 0 else "connected",
            tool_count=n,
        )
    _people_and_log(agent, owner)
    numbers = range(ROWS)
    return [
        ListPage(
            "/users/", "user-table", "users", "name",
            "row => row.querySelector('td[data-label=User] a')?.textContent.trim()",
            [f"Person {n:02d}" for n in numbers], "identity", "anonymous", 10,
        ),
        ListPage(
            "/knowledge/", "document-table", "documents", "name",
            "row => row.querySelector('input[name=name]')?.value",
            [f"doc-{n:02d}.md" for n in numbers], "status", "failed", 6,
        ),
        ListPage(
            "/webhooks/", "delivery-table", "deliveries", "attempts",
            "row => row.querySelector('td[data-label=Attempts]')?.textContent.trim()",
            [str(n) for n in reversed(numbers)], "status", "failed", 8,
        ),
        ListPage(
            "/runs/", "run-table", "runs", "tokens",
            "row => row.querySelector('td[data-label=Tokens]')?.textContent.trim()",
            [str(1000 + n) for n in reversed(numbers)], "status", "failed", 5,
        ),
        ListPage(
            "/conversations/", "conversation-table", "conversations", "created",
            "row => row.querySelector('td[data-label=Title] a')?.textContent.trim()",
            # Newest started first.
            [f"Chat {n:02d}" for n in reversed(range(ROWS + 1))], "status", "failed", 3,
        ),
        ListPage(
            "/api-keys/", "api-key-table", "keys", "name",
            "row => row.querySelector('td[data-label=Name]')?.textContent.trim()",
            [f"Key {n:02d}" for n in numbers], "status", "revoked", 10,
        ),
        ListPage(
            "/agents/", "agent-table", "active Agents", "name",
            "row => row.querySelector('td[data-label=Name] a')?.textContent.trim()",
            # The workspace's own Agent ("Support Agent") sorts after the bots.
            [f"Bot-{n:02d}" for n in numbers] + [agent.name], "q", "Bot-1", 10, search=True,
        ),
        ListPage(
            "/tools/", "server-table", "servers", "name",
            "row => row.querySelector('a.server-name')?.textContent.trim()",
            [f"Server {n:02d}" for n in numbers], "status", "failed", 6,
        ),
        ListPage(
            "/connected-apps/", "connected-app-list", "applications", "name",
            "row => row.querySelector('td[data-label=Application]')?.textContent.trim()",
            [f"App {n:02d}" for n in numbers], "status", "revoked", 6,
        ),
        ListPage(
            "/team/", "member-table", "members", "name",
            # The name cell's own text, without the "you" chip.
            "row => row.querySelector('td[data-label=Name]')?.firstChild.textContent.trim()",
            # The signed-in owner, Olive Owner, sorts before the Persons; owners: 10 and Olive.
            ["Olive Owner"] + [f"Person {n:02d}" for n in numbers], "role", "owner", 11,
        ),
        ListPage(
            "/audit-log/", "audit-table", "entries", "actor",
            "row => row.querySelector('td[data-label=Actor] .clip')?.textContent.trim()",
            [f"Person {n:02d}" for n in numbers], "action", "api_key.revoked", 6,
        ),
    ]  # fmt: skip


def _keys(page, spec: ListPage) -> list[str]:
    rows = page.locator(f"#{spec.table} table tbody tr:has(td)")
    return [key for key in rows.evaluate_all(f"rows => rows.map({spec.key})") if key]


def _count(page, spec: ListPage) -> str:
    return page.locator(f"#{spec.table} #list-count").inner_text()


def _header(page, spec: ListPage):
    return page.locator(f"#{spec.table} th[data-sort={spec.column}]")


@pytest.fixture
def lists(agent, owner):
    return _fill(agent, owner)


def test_on_a_phone_every_list_keeps_its_sort_headers_in_reach(console_page, lists):
    """At 390 px the rows are cards and the other header cells hide, but the sort headers stay:
    a row of links above the cards, each in view and working."""
    page = console_page
    page.set_viewport_size({"width": 390, "height": 844})
    for spec in lists:
        page.goto(f"{page.live_server_url}{spec.path}")
        settle(page)
        links = page.locator(f"#{spec.table} th.sortable a")
        assert links.count() >= 2, spec.path
        for index in range(links.count()):
            box = links.nth(index).bounding_box()
            assert box is not None and box["width"] > 10 and box["height"] > 10, spec.path
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (spec.path, box)
        _header(page, spec).locator("a").click()
        page.wait_for_url(f"**sort={spec.column}**")
        settle(page)
        assert _keys(page, spec) == spec.expected[:PAGE], spec.path


def test_every_list_counts_sorts_filters_and_pages_the_same_way(console_page, lists):
    page = console_page
    page.set_viewport_size({"width": 1440, "height": 900})
    for spec in lists:
        page.goto(f"{page.live_server_url}{spec.path}")
        settle(page)
        total = len(spec.expected)
        assert _count(page, spec).startswith(f"{total} {spec.noun}"), (
            spec.path,
            _count(page, spec),
        )

        # Every sortable header is a link in a header cell that says its state.
        headers = page.locator(f"#{spec.table} th.sortable")
        assert headers.count() >= 2, spec.path
        for index in range(headers.count()):
            header = headers.nth(index)
            assert header.get_attribute("aria-sort") in {"none", "ascending", "descending"}
            assert header.locator("a[href*='sort=']").count() == 1

        # Sorting by the keyboard: focus the header's link, press Enter.
        header = _header(page, spec)
        assert header.get_attribute("aria-sort") == "none", spec.path
        header.locator("a").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"**sort={spec.column}**")
        settle(page)
        header = _header(page, spec)
        assert header.get_attribute("aria-sort") in {"ascending", "descending"}, spec.path
        first_page = _keys(page, spec)
        assert first_page == spec.expected[:PAGE], spec.path
        assert _count(page, spec).startswith(f"{total} {spec.noun}")

        # The next page continues the same order; the header still says it.
        page.locator(f"#{spec.table} .pager [data-page=next]").click()
        page.wait_for_url("**after=**")
        settle(page)
        assert _keys(page, spec) == spec.expected[PAGE:], spec.path
        assert _header(page, spec).get_attribute("aria-sort") == header.get_attribute("aria-sort")
        assert page.locator(f"#{spec.table} .pager [data-page=next]").count() == 0
        assert page.locator(f"#{spec.table} .pager [data-page=first]").count() == 1
        page.locator(f"#{spec.table} .pager [data-page=previous]").click()
        page.wait_for_url("**before=**")
        settle(page)
        assert _keys(page, spec) == first_page, spec.path

        # A click on the sorted header turns the order around.
        _header(page, spec).locator("a").click()
        page.wait_for_url("**dir=**")
        settle(page)
        reverse = spec.expected[::-1]
        assert _keys(page, spec) == reverse[:PAGE], spec.path

        # The list's filter form (above the table, as on every list) narrows the rows and the
        # count, and keeps the order.
        if spec.search:
            page.locator(f"form.filters input[name={spec.filter_control}]").fill(spec.filter_value)
        else:
            control = page.locator(f"form.filters select[name={spec.filter_control}]")
            control.select_option(spec.filter_value)
        page.wait_for_url(f"**{spec.filter_control}={spec.filter_value}**")
        settle(page)
        count = _count(page, spec)
        assert count.startswith(f"{spec.filtered} "), (spec.path, count)
        assert "match" in count, count
        keys = _keys(page, spec)
        assert len(keys) == spec.filtered, spec.path
        assert keys == [key for key in reverse if key in keys], spec.path
        assert f"sort={spec.column}" in page.url
