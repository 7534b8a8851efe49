"""Team management in Chromium, with the keyboard alone (issue 26, item 8): invite, copy the
link, accept it in a second browser (with a new account, or by signing in), revoke an
invitation, change a role, remove a member (whose session and key die at once), transfer
ownership and leave."""

import pytest
from django.core import mail

from apps.workspaces.models import ApiKey, Invitation, Membership
from apps.workspaces.services import invitation_create
from tests.browser.conftest import log_in
from tests.browser.test_bulk_actions import _tab_to
from tests.conftest import ApiClient
from tests.factories import api_key_factory, user_factory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def page(browser):
    """The shared `page`, with room for a cold first page load on a loaded machine (the live
    server's first request imports and compiles what the rest reuse)."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(15_000)
    context.set_default_navigation_timeout(60_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def second_page(browser, live_server):
    """Another person's browser: its own cookies."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.live_server_url = live_server.url
    yield page
    context.close()


def _press_on(page, predicate_js: str, key: str = "Enter", *, confirm: bool = False) -> None:
    _tab_to(page, predicate_js)
    if confirm:
        page.once("dialog", lambda dialog: dialog.accept())
    page.keyboard.press(key)


def test_invite_copy_the_link_and_join_with_a_new_account(console_page, second_page):
    page = console_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{page.live_server_url}/team/")
    _tab_to(page, "el.id === 'id_email'")
    page.keyboard.type("guest@example.com")
    _press_on(page, "el.id === 'invite-button'")
    page.locator("#new-invitation").wait_for()
    link = page.locator("#new-invitation-link").inner_text().strip()
    assert link.startswith(f"{page.live_server_url}/invite/")
    assert (
        "We e-mailed this link to guest@example.com" in page.locator("#new-invitation").inner_text()
    )
    assert len(mail.outbox) == 1 and link in mail.outbox[0].body

    _press_on(page, "el.id === 'copy-invitation-link'")
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == link
    row = page.locator("#invitation-table tbody tr", has_text="guest@example.com")
    assert row.locator("[data-status]").inner_text() == "Pending"

    other = second_page
    other.goto(link)
    assert (
        "invited guest@example.com to join Acme as member"
        in other.locator("#invitation-summary").inner_text()
    )
    _tab_to(other, "el.id === 'id_name'")
    other.keyboard.type("Gus Guest")
    _tab_to(other, "el.id === 'id_password'")
    other.keyboard.type("a long enough pass 42")
    other.keyboard.press("Tab")
    other.keyboard.type("a long enough pass 42")
    other.keyboard.press("Enter")
    other.get_by_text("Welcome to Acme. You joined as member.").wait_for()
    assert Membership.objects.get(user__email="guest@example.com").role == "member"

    # The link was for one use.
    other.goto(link)
    assert "already been used" in other.locator("#invitation-error").inner_text()
    page.reload()
    assert page.locator("#member-table tbody tr", has_text="Gus Guest").count() == 1
    assert page.locator("#invitation-table").count() == 0
    assert link not in page.content()


def test_an_existing_account_signs_in_to_accept(console_page, second_page, workspace, owner):
    person = user_factory(email="known@example.com")
    created = invitation_create(
        workspace=workspace, by_user=owner, role="owner", site_url=console_page.live_server_url
    )
    other = second_page
    other.goto(created.link)
    _press_on(other, "el.id === 'sign-in-to-accept'")
    other.locator("#id_username").wait_for()
    other.keyboard.type(person.email)  # the sign-in page focuses its first field
    other.keyboard.press("Tab")
    other.keyboard.type(person.raw_password)
    other.keyboard.press("Enter")
    other.locator("#accept-invitation").wait_for()
    _press_on(other, "el.id === 'accept-invitation'")
    other.get_by_text("Welcome to Acme. You joined as owner.").wait_for()
    assert Membership.objects.get(user=person).role == "owner"


def test_revoke_an_invitation_with_the_keyboard(console_page, second_page, workspace, owner):
    created = invitation_create(
        workspace=workspace, by_user=owner, role="member", site_url=console_page.live_server_url
    )
    page = console_page
    page.goto(f"{page.live_server_url}/team/")
    _press_on(
        page, "el.closest('#invitation-table') && el.textContent.trim() === 'Revoke'", confirm=True
    )
    page.get_by_text("Revoked the invitation.").wait_for()
    assert Invitation.objects.get().status == "revoked"
    second_page.goto(created.link)
    assert "revoked" in second_page.locator("#invitation-error").inner_text()


def test_change_a_role_then_remove_a_member_whose_session_and_key_die_at_once(
    console_page, second_page, live_server, member, agent
):
    _key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    assert ApiClient(raw).get("/v1/connection").status == 200
    log_in(second_page, live_server, member)
    second_page.goto(f"{live_server.url}/runs/")
    assert second_page.locator("h1", has_text="Runs").count() == 1

    page = console_page
    membership = Membership.objects.get(user=member)
    page.goto(f"{page.live_server_url}/team/")
    _tab_to(page, f"el.id === 'role-{membership.pk}'")
    page.keyboard.press("ArrowUp")  # Member -> Owner (the options are Owner, Member)
    assert page.evaluate("document.activeElement.value") == "owner"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.get_by_text("Mo Member is now owner.").wait_for()
    assert Membership.objects.get(pk=membership.pk).role == "owner"

    _press_on(page, "el.getAttribute('aria-label') === 'Remove member@example.com'", confirm=True)
    page.get_by_text("Removed Mo Member from Acme. 1 API key they created was revoked.").wait_for()
    assert not Membership.objects.filter(pk=membership.pk).exists()

    assert ApiClient(raw).get("/v1/connection").status == 401
    second_page.reload()
    assert second_page.locator("h1", has_text="No Agent yet").count() == 1


def test_transfer_ownership_then_leave(console_page, member, owner):
    page = console_page
    page.goto(f"{page.live_server_url}/team/")
    # The only owner cannot leave yet.
    assert page.locator("#member-table button:disabled", has_text="Leave").count() == 1
    _press_on(
        page,
        "el.getAttribute('aria-label') === 'Transfer ownership to member@example.com'",
        confirm=True,
    )
    page.get_by_text("Mo Member now owns Acme; you are a member.").wait_for()
    assert Membership.objects.get(user=member).role == "owner"
    assert Membership.objects.get(user=owner).role == "member"
    assert page.locator("#invitation-create-form").count() == 0  # no longer an owner

    _press_on(page, "el.id === 'leave-button'", confirm=True)
    page.locator("h1", has_text="No Agent yet").wait_for()
    assert not Membership.objects.filter(user=owner).exists()
    assert ApiKey.objects.count() == 0
