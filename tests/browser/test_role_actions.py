"""A member is offered only what a member may do, and a refused click says why in place
(issue 38, defect 1)."""

import pytest

from apps.workspaces.models import Membership
from tests.browser.conftest import log_in
from tests.factories import api_key_factory, membership_factory, user_factory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_member_sees_revoke_only_on_their_own_keys(page, live_server, agent, owner, member):
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name="Owner key")
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=member, name="Member key")
    log_in(page, live_server, member)
    page.goto(f"{live_server.url}/api-keys/")
    theirs = page.locator("#api-key-table tbody tr", has_text="Owner key")
    mine = page.locator("#api-key-table tbody tr", has_text="Member key")
    assert theirs.get_by_role("button", name="Revoke").count() == 0
    assert theirs.locator("input[type=checkbox]").count() == 0
    assert "Only an owner can revoke" in theirs.inner_text()
    assert mine.get_by_role("button", name="Revoke").count() == 1


def test_a_refused_revoke_says_why_in_the_row(page, live_server, agent, owner, workspace):
    # An owner opens the page, is made a member meanwhile, then clicks Revoke on a key
    # someone else created: the refusal shows in that row, at once.
    demoted = user_factory(email="demoted@example.com")
    membership = membership_factory(workspace=workspace, user=demoted, role=Membership.Role.OWNER)
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name="Owner key")
    log_in(page, live_server, demoted)
    page.goto(f"{live_server.url}/api-keys/")
    Membership.objects.filter(pk=membership.pk).update(role=Membership.Role.MEMBER)
    row = page.locator("#api-key-table tbody tr", has_text="Owner key")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    error = page.locator("#api-key-table tbody tr", has_text="Owner key").locator(".inline-error")
    error.wait_for()
    assert "Only owners can revoke keys created by someone else" in error.inner_text()


def test_an_owners_only_htmx_action_refused_says_why_in_place(page, live_server, agent, workspace):
    # The webhook page's "Reveal" posts through HTMX; its clicker stopped being an owner since
    # the page opened: the reason shows beside the button, the page stays.
    from tests.webhooks.factories import webhook_factory

    webhook_factory(agent=agent)
    demoted = user_factory(email="was-owner@example.com")
    membership = membership_factory(workspace=workspace, user=demoted, role=Membership.Role.OWNER)
    log_in(page, live_server, demoted)
    page.goto(f"{live_server.url}/webhooks/")
    Membership.objects.filter(pk=membership.pk).update(role=Membership.Role.MEMBER)
    page.click("#reveal-secret")
    note = page.locator(".inline-actions .inline-error")
    note.wait_for()
    assert "Only workspace owners can do this" in note.inner_text()
    assert page.url.endswith("/webhooks/")
