"""The Team page, the invitation link's page and `/admin/`, through Django's test client."""

import logging

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.workspaces.models import ApiKey, Invitation, Membership
from apps.workspaces.services import invitation_create
from tests.conftest import ApiClient, console_client
from tests.factories import api_key_factory, user_factory

pytestmark = pytest.mark.django_db


def _link(workspace, owner, **kw) -> str:
    created = invitation_create(
        workspace=workspace,
        by_user=owner,
        role=kw.pop("role", "member"),
        site_url="http://testserver",
        **kw,
    )
    return created.link.removeprefix("http://testserver")


def test_team_page_lists_members_with_roles_and_owner_controls(owner, member, agent):
    html = console_client(owner, agent).get("/team/").content.decode()
    assert "Olive Owner" in html and "member@example.com" in html
    assert 'id="invitation-create-form"' in html
    assert "Transfer ownership" in html and "Remove" in html
    # The only owner cannot leave: the button is there, disabled, and says why.
    assert "transfer ownership before you leave" in html


def test_members_see_the_team_but_no_owner_controls(owner, member, agent):
    html = console_client(member, agent).get("/team/").content.decode()
    assert "Olive Owner" in html
    assert 'id="invitation-create-form"' not in html
    assert "Transfer ownership" not in html and "Change role" not in html
    assert 'id="leave-button"' in html
    assert (
        console_client(member, agent).post("/team/invite/", {"role": "member"}).status_code == 403
    )


def test_the_team_link_is_in_the_navigation(owner, agent):
    assert 'href="/team/"' in console_client(owner, agent).get("/runs/").content.decode()


def test_invitation_link_is_shown_once(owner, agent):
    client = console_client(owner, agent)
    response = client.post("/team/invite/", {"email": "", "role": "member"})
    assert response.status_code == 302
    html = client.get("/team/").content.decode()
    assert 'id="new-invitation-link"' in html
    link = html.split('id="new-invitation-link">', 1)[1].split("<", 1)[0]
    assert link.startswith("http://testserver/invite/")
    again = client.get("/team/").content.decode()
    assert link not in again and "Anyone with the link" in again


def test_a_bad_invitation_form_says_why_and_creates_nothing(owner, member, agent):
    client = console_client(owner, agent)
    response = client.post("/team/invite/", {"email": "member@example.com", "role": "member"})
    assert response.status_code == 400
    assert "already a member" in response.content.decode()
    response = client.post("/team/invite/", {"email": "x@", "role": "member"})
    assert response.status_code == 400 and "valid e-mail" in response.content.decode()
    assert not Invitation.objects.exists()


def test_invitation_page_states(owner, workspace, agent, time_machine):
    anonymous = Client()
    assert anonymous.get("/invite/not-a-real-token/").status_code == 404
    path = _link(workspace, owner)
    page = anonymous.get(path)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Olive Owner invited you to join <strong>Acme</strong> as member" in html
    assert 'id="join-form"' in html and "next=/invite/" in html
    Invitation.objects.update(expires_at="2000-01-01T00:00:00Z")
    expired = anonymous.get(path)
    assert expired.status_code == 410 and "expired" in expired.content.decode()


def test_the_request_log_never_shows_the_invitation_token(owner, workspace, caplog):
    path = _link(workspace, owner)
    token = path.strip("/").rsplit("/", 1)[1]
    with caplog.at_level(logging.INFO, logger="apps.api"):
        Client().get(path)
    logged = [getattr(record, "path", "") for record in caplog.records]
    assert "/invite/…/" in logged
    assert not any(token in str(record.__dict__) for record in caplog.records)


def test_join_with_a_new_account_signs_in_and_opens_the_workspace(owner, workspace, agent):
    path = _link(workspace, owner)
    browser = Client()
    refused = browser.post(
        f"{path}join/",
        {"name": "New", "email": "new@example.com", "password": "x", "password_again": "x"},
    )
    assert refused.status_code == 400 and "too short" in refused.content.decode()
    assert not get_user_model().objects.filter(email="new@example.com").exists()
    fields = {"name": "New Person", "email": "new@example.com"}
    joined = browser.post(
        f"{path}join/",
        {**fields, "password": "a long enough pass 42", "password_again": "a long enough pass 42"},
    )
    assert joined.status_code == 302
    html = browser.get("/team/").content.decode()
    assert "Welcome to Acme" in html and "new@example.com" in html
    assert Membership.objects.get(user__email="new@example.com").role == "member"


def test_joining_an_address_invitation_with_another_address_is_a_form_error(
    owner, workspace, agent
):
    """Before: the address typed was silently replaced by the invited one."""
    path = _link(workspace, owner, email="bound@example.com")
    browser = Client()
    page = browser.get(path).content.decode()
    # The page says whose the invitation is, and that the account is made with that address.
    assert 'name="email" type="email" value="bound@example.com" readonly' in page
    assert "your account is created with it" in page
    password = "a long enough pass 42"
    fields = {"name": "Other", "password": password, "password_again": password}
    refused = browser.post(f"{path}join/", {**fields, "email": "other@example.com"})
    assert refused.status_code == 400
    html = refused.content.decode()
    error = html.split('id="id_email"', 1)[1].split('class="field-error"', 1)[1]
    assert error.split("</div>", 1)[0].endswith(
        "this invitation is for bound@example.com, so the account is created with that address. "
        "To join as other@example.com, ask the workspace owner to invite that address."
    )
    assert not get_user_model().objects.filter(email__in=["other@example.com", "bound@example.com"])
    assert list(Membership.objects.filter(workspace=workspace).values_list("user", flat=True)) == [
        owner.pk
    ]
    assert Invitation.objects.get().status == "pending"

    joined = browser.post(f"{path}join/", {**fields, "email": "bound@example.com"})
    assert joined.status_code == 302
    assert Membership.objects.get(user__email="bound@example.com").workspace == workspace


def test_signed_in_person_accepts_with_a_button(owner, workspace, agent):
    path = _link(workspace, owner, role="owner")
    person = user_factory(email="joiner@example.com")
    browser = Client()
    browser.force_login(person)
    page = browser.get(path).content.decode()
    assert 'id="accept-invitation"' in page and 'id="join-form"' not in page
    assert browser.post(path).status_code == 302
    assert Membership.objects.get(user=person).role == "owner"
    spent = browser.post(path)
    assert spent.status_code == 410 and "already been used" in spent.content.decode()


def test_removing_a_member_from_the_page_says_what_was_revoked(owner, member, workspace, agent):
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    membership = Membership.objects.get(user=member)
    client = console_client(owner, agent)
    html = client.post(f"/team/members/{membership.pk}/remove/", follow=True).content.decode()
    assert "Removed Mo Member from Acme. 1 API key they created was revoked." in html
    assert ApiKey.objects.get(created_by=member).revoked_at is not None


def test_the_last_owner_is_told_why_not(owner, workspace, agent):
    mine = Membership.objects.get(user=owner)
    client = console_client(owner, agent)
    html = client.post(
        f"/team/members/{mine.pk}/role/", {"role": "member"}, follow=True
    ).content.decode()
    assert "last owner" in html
    assert Membership.objects.get(user=owner).role == "owner"


# --- /admin/ ----------------------------------------------------------------------------------


@pytest.fixture
def staff_client(db):
    staff = get_user_model().objects.create_superuser(
        username="staff@example.com", email="staff@example.com", password="staff pass 1234"
    )
    client = Client()
    client.force_login(staff)
    return client


def test_admin_lists_tenancy_without_secrets(staff_client, owner, workspace, agent):
    key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    _link(workspace, owner, email="guest@example.com")
    invitation = Invitation.objects.get()
    index = staff_client.get("/admin/").content.decode()
    for model in ("workspace", "membership", "agent", "apikey", "invitation"):
        assert f"/admin/workspaces/{model}/" in index
    assert "accesstoken" not in index and "refreshtoken" not in index
    pages = [
        "/admin/workspaces/workspace/",
        f"/admin/workspaces/workspace/{workspace.pk}/change/",
        "/admin/workspaces/membership/?q=owner@example.com",
        "/admin/workspaces/agent/",
        "/admin/workspaces/apikey/?kind__exact=key",
        f"/admin/workspaces/apikey/{key.pk}/change/",
        "/admin/workspaces/invitation/",
        f"/admin/workspaces/invitation/{invitation.pk}/change/",
        "/admin/auth/user/",
    ]
    for page in pages:
        response = staff_client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert key.secret_hash not in html and raw[12:] not in html, page
        assert invitation.token_hash not in html, page
    assert "Acme" in staff_client.get("/admin/workspaces/workspace/?q=acme").content.decode()


def test_admin_rows_are_read_only_and_actions_use_the_services(staff_client, owner, member, agent):
    key, _raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    assert staff_client.get("/admin/workspaces/membership/add/").status_code == 403
    response = staff_client.post(f"/admin/workspaces/apikey/{key.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403 and ApiKey.objects.filter(pk=key.pk).exists()
    owner_membership = Membership.objects.get(user=owner)
    # The last owner is protected here too.
    page = staff_client.post(
        "/admin/workspaces/membership/",
        {"action": "remove", "_selected_action": [owner_membership.pk]},
        follow=True,
    ).content.decode()
    assert "last owner" in page and Membership.objects.filter(pk=owner_membership.pk).exists()
    member_membership = Membership.objects.get(user=member)
    staff_client.post(
        "/admin/workspaces/membership/",
        {"action": "remove", "_selected_action": [member_membership.pk]},
    )
    assert not Membership.objects.filter(pk=member_membership.pk).exists()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None


def test_admin_is_for_staff_only(owner, agent):
    response = console_client(owner, agent).get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_removal_refused_by_the_key_cache_says_so_and_changes_nothing(
    owner, member, workspace, agent, private_redis
):
    key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    assert ApiClient(raw).get("/v1/connection").status == 200  # cached
    membership = Membership.objects.get(user=member)
    client = console_client(owner, agent)
    private_redis.client().execute_command("CLIENT", "PAUSE", 4000, "WRITE")
    try:
        html = client.post(f"/team/members/{membership.pk}/remove/", follow=True).content.decode()
    finally:
        private_redis.client().execute_command("CLIENT", "UNPAUSE")
    assert "could not be cleared" in html and "Removed Mo Member" not in html
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None


def test_admin_offboards_a_person_except_where_they_are_the_last_owner(
    staff_client, owner, member, agent
):
    key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    session = console_client(member, agent)
    html = staff_client.post(
        "/admin/auth/user/", {"action": "offboard", "_selected_action": [member.pk]}, follow=True
    ).content.decode()
    assert "left 1 workspace(s), 1 key(s) revoked, account deactivated" in html
    member.refresh_from_db()
    assert not member.is_active and not Membership.objects.filter(user=member).exists()
    assert ApiClient(raw).get("/v1/connection").status == 401
    assert session.get("/runs/").status_code == 302  # signed out: to the sign-in page

    html = staff_client.post(
        "/admin/auth/user/", {"action": "offboard", "_selected_action": [owner.pk]}, follow=True
    ).content.decode()
    assert "still the last owner of Acme" in html
    owner.refresh_from_db()
    assert owner.is_active and Membership.objects.filter(user=owner, role="owner").exists()
