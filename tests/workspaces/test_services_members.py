"""Team services: invitations (one-time, expiring, revocable, e-mailed), roles, removal with
the member's credentials ended at once, leaving, ownership transfer, and the last owner."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict, InsufficientScope, NotFound
from apps.workspaces.browser_tokens import browser_token_sign
from apps.workspaces.models import ApiKey, Invitation, Membership
from apps.workspaces.services import (
    invitation_accept,
    invitation_accept_with_new_account,
    invitation_by_token,
    invitation_create,
    invitation_revoke,
    member_remove,
    member_role_change,
    ownership_transfer,
)
from tests.conftest import ApiClient, console_client
from tests.factories import api_key_factory, membership_factory, user_factory

pytestmark = pytest.mark.django_db

SITE = "http://console.example.com"


def _invite(workspace, owner, **kw):
    kw.setdefault("role", "member")
    return invitation_create(workspace=workspace, by_user=owner, site_url=SITE, **kw)


def _token(created) -> str:
    return created.link.rstrip("/").rsplit("/", 1)[1]


def _membership(workspace, user) -> Membership:
    return Membership.objects.get(workspace=workspace, user=user)


# --- Invitations ----------------------------------------------------------------------------


def test_invitation_link_is_shown_once_and_only_its_hash_is_stored(workspace, owner):
    created = _invite(workspace, owner)
    token = _token(created)
    assert created.link == f"{SITE}/invite/{token}/"
    assert len(token) >= 43
    row = Invitation.objects.get()
    assert token not in (row.token_hash, row.pk, row.email)
    assert invitation_by_token(token) == row
    assert invitation_by_token(token[:-1] + ("A" if token[-1] != "A" else "B")) is None


def test_invitation_expires_after_the_configured_days(workspace, owner, settings, time_machine):
    settings.TEAM_INVITATION_DAYS = 3
    time_machine.move_to("2026-03-01T12:00:00Z", tick=False)
    created = _invite(workspace, owner)
    assert created.invitation.expires_at == timezone.now() + timedelta(days=3)
    newcomer = user_factory()
    time_machine.move_to("2026-03-04T12:00:01Z", tick=False)
    with pytest.raises(Conflict, match="expired"):
        invitation_accept(token=_token(created), user=newcomer)
    assert not Membership.objects.filter(user=newcomer).exists()


def test_invitation_is_single_use(workspace, owner):
    created = _invite(workspace, owner, role="owner")
    first, second = user_factory(), user_factory()
    membership = invitation_accept(token=_token(created), user=first)
    assert membership.role == "owner" and membership.workspace == workspace
    with pytest.raises(Conflict, match="already been used"):
        invitation_accept(token=_token(created), user=second)
    assert not Membership.objects.filter(user=second).exists()
    invitation = Invitation.objects.get()
    assert invitation.status == "accepted" and invitation.accepted_by == first


def test_revoked_invitation_cannot_be_accepted_or_revoked_again(workspace, owner):
    created = _invite(workspace, owner)
    invitation_revoke(workspace=workspace, invitation_id=created.invitation.pk, by_user=owner)
    with pytest.raises(Conflict, match="revoked"):
        invitation_accept(token=_token(created), user=user_factory())
    with pytest.raises(Conflict, match="already revoked"):
        invitation_revoke(workspace=workspace, invitation_id=created.invitation.pk, by_user=owner)


def test_only_owners_invite_and_revoke(workspace, owner, member, other_agent):
    with pytest.raises(InsufficientScope, match="Only workspace owners"):
        _invite(workspace, member)
    assert not Invitation.objects.exists()
    created = _invite(workspace, owner)
    with pytest.raises(InsufficientScope):
        invitation_revoke(workspace=workspace, invitation_id=created.invitation.pk, by_user=member)
    # Another workspace's invitation is not found from this one.
    with pytest.raises(NotFound):
        invitation_revoke(
            workspace=other_agent.workspace,
            invitation_id=created.invitation.pk,
            by_user=Membership.objects.get(workspace=other_agent.workspace).user,
        )
    assert Invitation.objects.get().status == "pending"


def test_invitation_with_an_address_is_emailed_and_only_that_address_accepts(workspace, owner):
    created = _invite(workspace, owner, email="  New.Person@Example.com ")
    assert created.email_sent and created.email_error is None
    assert created.invitation.email == "new.person@example.com"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["new.person@example.com"]
    assert "Acme" in message.subject
    assert created.link in message.body and "Olive Owner" in message.body

    stranger = user_factory(email="someone.else@example.com")
    with pytest.raises(Conflict, match="for new.person@example.com"):
        invitation_accept(token=_token(created), user=stranger)
    invited = user_factory(email="NEW.PERSON@example.com")
    assert invitation_accept(token=_token(created), user=invited).role == "member"


def test_a_link_invitation_sends_no_email(workspace, owner):
    created = _invite(workspace, owner)
    assert not created.email_sent and created.email_error is None
    assert mail.outbox == []


def test_a_failing_mail_server_keeps_the_invitation_and_says_so(workspace, owner, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    created = _invite(workspace, owner, email="far@example.com")
    assert not created.email_sent
    assert "copy the link" in created.email_error
    assert Invitation.objects.get().status == "pending"


def test_inviting_an_address_again_replaces_its_open_invitation(workspace, owner):
    first = _invite(workspace, owner, email="twice@example.com")
    second = _invite(workspace, owner, email="twice@example.com", role="owner")
    with pytest.raises(Conflict, match="revoked"):
        invitation_accept(token=_token(first), user=user_factory(email="twice@example.com"))
    assert Invitation.objects.filter(revoked_at__isnull=True).get() == second.invitation


def test_inviting_a_member_or_a_bad_address_is_refused(workspace, owner, member):
    with pytest.raises(Conflict, match="already a member"):
        _invite(workspace, owner, email="MEMBER@example.com")
    with pytest.raises(BadRequest, match="email"):
        _invite(workspace, owner, email="not an address")
    with pytest.raises(BadRequest, match="role"):
        _invite(workspace, owner, role="admin")
    with pytest.raises(BadRequest, match="at most 254"):
        _invite(workspace, owner, email="a" * 60 + "@" + ".".join(["b" * 60] * 4) + ".com")
    assert not Invitation.objects.exists()


def test_accepting_as_a_member_already_is_refused_and_keeps_the_link(workspace, owner, member):
    created = _invite(workspace, owner)
    with pytest.raises(Conflict, match="already a member"):
        invitation_accept(token=_token(created), user=member)
    assert Invitation.objects.get().status == "pending"
    assert _membership(workspace, member).role == "member"


def test_accepting_with_a_new_account_creates_it_and_joins(workspace, owner):
    created = _invite(workspace, owner)
    membership = invitation_accept_with_new_account(
        token=_token(created),
        email="Fresh@Example.com",
        name="Fresh Person",
        password="a long enough pass 42",
    )
    user = membership.user
    assert (user.username, user.email, user.first_name) == (
        "fresh@example.com",
        "fresh@example.com",
        "Fresh Person",
    )
    assert user.check_password("a long enough pass 42")
    assert membership.workspace == workspace and membership.role == "member"


def test_a_new_account_for_an_email_invitation_refuses_another_address(workspace, owner):
    """Before: the account was made with the invited address whatever was typed, so the person
    could not sign in with the address they gave."""
    created = _invite(workspace, owner, email="bound@example.com")
    with pytest.raises(BadRequest) as refused:
        invitation_accept_with_new_account(
            token=_token(created),
            email="other@example.com",
            name="B",
            password="a long enough pass 42",
        )
    assert refused.value.message.startswith("email: this invitation is for bound@example.com")
    assert "other@example.com" in refused.value.message
    assert not get_user_model().objects.filter(email__in=["other@example.com", "bound@example.com"])
    created.invitation.refresh_from_db()
    assert created.invitation.status == "pending"


@pytest.mark.parametrize("typed", ["", "bound@example.com", " Bound@Example.COM "])
def test_a_new_account_for_an_email_invitation_is_made_with_its_address(workspace, owner, typed):
    created = _invite(workspace, owner, email="bound@example.com")
    membership = invitation_accept_with_new_account(
        token=_token(created), email=typed, name="B", password="a long enough pass 42"
    )
    assert membership.user.email == "bound@example.com"
    assert membership.user.username == "bound@example.com"


@pytest.mark.parametrize(
    ("email", "name", "password", "error"),
    [
        ("owner@example.com", "Dup", "a long enough pass 42", "exists already"),
        ("fresh@example.com", "Short", "abc", "password"),
        ("fresh@example.com", "Common", "password123", "password"),
        ("fresh@example.com", "", "a long enough pass 42", "name"),
        ("nope", "Bad", "a long enough pass 42", "email"),
        ("x" * 140 + "@example.com", "Long", "a long enough pass 42", "at most 150"),
    ],
)
def test_a_refused_new_account_creates_nothing(workspace, owner, email, name, password, error):
    created = _invite(workspace, owner)
    users_before = get_user_model().objects.count()
    with pytest.raises((BadRequest, Conflict), match=error):
        invitation_accept_with_new_account(
            token=_token(created), email=email, name=name, password=password
        )
    assert get_user_model().objects.count() == users_before
    assert Invitation.objects.get().status == "pending"


def test_a_dead_link_creates_no_account(workspace, owner):
    created = _invite(workspace, owner)
    invitation_revoke(workspace=workspace, invitation_id=created.invitation.pk, by_user=owner)
    with pytest.raises(Conflict):
        invitation_accept_with_new_account(
            token=_token(created),
            email="late@example.com",
            name="L",
            password="a long enough pass 42",
        )
    assert not get_user_model().objects.filter(email="late@example.com").exists()


# --- Roles and the last owner -----------------------------------------------------------------


def test_owner_changes_roles_members_cannot(workspace, owner, member):
    membership = _membership(workspace, member)
    with pytest.raises(InsufficientScope):
        member_role_change(
            workspace=workspace, membership_id=membership.pk, role="owner", by_user=member
        )
    assert _membership(workspace, member).role == "member"
    member_role_change(
        workspace=workspace, membership_id=membership.pk, role="owner", by_user=owner
    )
    assert _membership(workspace, member).role == "owner"
    with pytest.raises(Conflict, match="already an owner"):
        member_role_change(
            workspace=workspace, membership_id=membership.pk, role="owner", by_user=owner
        )


def test_the_last_owner_cannot_be_demoted_removed_or_leave(workspace, owner, member):
    mine = _membership(workspace, owner)
    with pytest.raises(Conflict, match="last owner"):
        member_role_change(workspace=workspace, membership_id=mine.pk, role="member", by_user=owner)
    with pytest.raises(Conflict, match="last owner"):
        member_remove(workspace=workspace, membership_id=mine.pk, by_user=owner)
    with pytest.raises(Conflict, match="last owner"):
        member_remove(workspace=workspace, membership_id=mine.pk, by_user=None)
    assert _membership(workspace, owner).role == "owner"


def test_an_owner_may_step_down_while_another_owner_remains(workspace, owner, member):
    member_role_change(
        workspace=workspace,
        membership_id=_membership(workspace, member).pk,
        role="owner",
        by_user=owner,
    )
    member_role_change(
        workspace=workspace,
        membership_id=_membership(workspace, owner).pk,
        role="member",
        by_user=owner,
    )
    assert _membership(workspace, owner).role == "member"
    # Now the other is the last owner.
    with pytest.raises(Conflict, match="last owner"):
        member_role_change(
            workspace=workspace,
            membership_id=_membership(workspace, member).pk,
            role="member",
            by_user=member,
        )


def test_a_membership_of_another_workspace_is_not_found(workspace, owner, other_agent):
    theirs = Membership.objects.get(workspace=other_agent.workspace)
    for call in (
        lambda: member_role_change(
            workspace=workspace, membership_id=theirs.pk, role="member", by_user=owner
        ),
        lambda: member_remove(workspace=workspace, membership_id=theirs.pk, by_user=owner),
        lambda: ownership_transfer(workspace=workspace, membership_id=theirs.pk, by_user=owner),
        lambda: member_remove(workspace=workspace, membership_id="abc", by_user=owner),
    ):
        with pytest.raises(NotFound):
            call()
    assert Membership.objects.filter(pk=theirs.pk, role="owner").exists()


def test_a_demoted_owners_key_loses_owner_operations_at_once(workspace, owner, member, agent):
    member_role_change(
        workspace=workspace,
        membership_id=_membership(workspace, member).pk,
        role="owner",
        by_user=owner,
    )
    _key, raw = api_key_factory(agent=agent, scopes=["webhooks:read"], created_by=member)
    api = ApiClient(raw)
    assert api.get("/v1/connection").json()["is_owner"] is True
    member_role_change(
        workspace=workspace,
        membership_id=_membership(workspace, member).pk,
        role="member",
        by_user=owner,
    )
    assert api.get("/v1/connection").json()["is_owner"] is False
    refused = api.get(f"/v1/agents/{agent.pk}/webhook")
    assert refused.status == 403 and refused.json()["name"] == "insufficient_scope"


# --- Ownership ------------------------------------------------------------------------------


def test_ownership_transfer_swaps_the_roles(workspace, owner, member):
    ownership_transfer(
        workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=owner
    )
    assert _membership(workspace, member).role == "owner"
    assert _membership(workspace, owner).role == "member"


def test_ownership_transfer_needs_an_owner_and_a_member(workspace, owner, member):
    with pytest.raises(InsufficientScope):
        ownership_transfer(
            workspace=workspace, membership_id=_membership(workspace, owner).pk, by_user=member
        )
    with pytest.raises(Conflict, match="already own"):
        ownership_transfer(
            workspace=workspace, membership_id=_membership(workspace, owner).pk, by_user=owner
        )
    member_role_change(
        workspace=workspace,
        membership_id=_membership(workspace, member).pk,
        role="owner",
        by_user=owner,
    )
    with pytest.raises(Conflict, match="already an owner"):
        ownership_transfer(
            workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=owner
        )
    assert _membership(workspace, owner).role == "owner"


# --- Removal and leaving ----------------------------------------------------------------------


def test_removal_revokes_the_members_keys_and_their_browser_tokens_at_once(
    workspace, owner, member, agent, sibling_agent, other_agent
):
    key, raw = api_key_factory(
        agent=agent, scopes=["auth_tokens:create", "runs:read"], created_by=member
    )
    _sibling_key, sibling_raw = api_key_factory(
        agent=sibling_agent, scopes=["runs:read"], created_by=member
    )
    _owners_key, owners_raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner)
    # The member's key in another workspace is not this workspace's business.
    membership_factory(workspace=other_agent.workspace, user=member)
    _elsewhere, elsewhere_raw = api_key_factory(
        agent=other_agent, scopes=["runs:read"], created_by=member
    )
    token, _ = browser_token_sign(key=key, user_id="usr_x", lifetime_seconds=600)
    for credential in (raw, sibling_raw, owners_raw, elsewhere_raw):
        assert ApiClient(credential).get("/v1/connection").status == 200  # cached with Redis
    assert ApiClient(token).get("/v1/connection").status == 200

    removal = member_remove(
        workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=owner
    )

    assert removal.keys_revoked == 2 and removal.user == member
    assert not Membership.objects.filter(workspace=workspace, user=member).exists()
    for dead in (raw, sibling_raw, token):
        response = ApiClient(dead).get("/v1/connection")
        assert response.status == 401, dead[:8]
    assert ApiClient(owners_raw).get("/v1/connection").status == 200
    assert ApiClient(elsewhere_raw).get("/v1/connection").status == 200
    assert ApiKey.objects.filter(created_by=member, revoked_at__isnull=False).count() == 2


def test_removal_revokes_the_invitations_the_person_sent(workspace, owner, member):
    member_role_change(
        workspace=workspace,
        membership_id=_membership(workspace, member).pk,
        role="owner",
        by_user=owner,
    )
    theirs = _invite(workspace, member)
    mine = _invite(workspace, owner)
    removal = member_remove(
        workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=owner
    )
    assert removal.invitations_revoked == 1
    with pytest.raises(Conflict, match="revoked"):
        invitation_accept(token=_token(theirs), user=user_factory())
    assert invitation_by_token(_token(mine)).status == "pending"


def test_removed_members_console_session_stops_at_once(workspace, owner, member, agent):
    session = console_client(member, agent)
    assert session.get("/runs/").status_code == 200
    member_remove(
        workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=owner
    )
    response = session.get("/runs/")
    assert response.status_code == 403
    assert "not a member of any workspace" in response.content.decode()


def test_members_cannot_remove_others_but_can_leave(workspace, owner, member, agent):
    other = user_factory()
    membership_factory(workspace=workspace, user=other)
    with pytest.raises(InsufficientScope):
        member_remove(
            workspace=workspace, membership_id=_membership(workspace, other).pk, by_user=member
        )
    _key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    removal = member_remove(
        workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=member
    )
    assert removal.keys_revoked == 1
    assert ApiClient(raw).get("/v1/connection").status == 401
    assert Membership.objects.filter(workspace=workspace).count() == 2


def test_removal_is_undone_when_the_key_cache_cannot_revoke(
    workspace, owner, member, agent, private_redis
):
    _key, raw = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member)
    assert ApiClient(raw).get("/v1/connection").status == 200
    private_redis.client().execute_command("CLIENT", "PAUSE", 4000, "WRITE")
    try:
        from apps.common.errors import ServiceUnavailable

        with pytest.raises(ServiceUnavailable):
            member_remove(
                workspace=workspace, membership_id=_membership(workspace, member).pk, by_user=owner
            )
    finally:
        private_redis.client().execute_command("CLIENT", "UNPAUSE")
    assert Membership.objects.filter(workspace=workspace, user=member).exists()
    assert ApiKey.objects.get(created_by=member).revoked_at is None
