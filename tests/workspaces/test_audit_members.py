"""Every team change leaves its audit entry, with the right actor and never the invitation
link: invite, revoke an invitation, join, change a role, transfer ownership, remove, leave."""

import pytest

from apps.common.errors import Conflict
from apps.workspaces.models import AuditEvent, Membership
from apps.workspaces.services import (
    invitation_accept,
    invitation_create,
    invitation_revoke,
    member_remove,
    member_role_change,
    ownership_transfer,
)
from tests.factories import agent_factory, api_key_factory, membership_factory, user_factory

pytestmark = pytest.mark.django_db

SITE = "http://console.example.com"


def _entries(workspace) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(workspace=workspace).order_by("created_at", "id"))


def _last(workspace, action: str) -> AuditEvent:
    return AuditEvent.objects.filter(workspace=workspace, action=action).latest("created_at")


def _membership(workspace, user) -> Membership:
    return Membership.objects.get(workspace=workspace, user=user)


def test_invitations_and_joining_are_recorded_without_the_link(workspace, owner):
    created = invitation_create(
        workspace=workspace, by_user=owner, role="member", email="new@example.com", site_url=SITE
    )
    invited = _last(workspace, "member.invited")
    assert (invited.target_id, invited.target_name) == (created.invitation.pk, "new@example.com")
    assert invited.changes == {"role": "member"}

    link = invitation_create(workspace=workspace, by_user=owner, role="owner", site_url=SITE)
    invitation_revoke(workspace=workspace, invitation_id=link.invitation.pk, by_user=owner)
    assert _last(workspace, "member.invitation_revoked").target_id == link.invitation.pk

    newcomer = user_factory(email="new@example.com", first_name="Nia")
    token = created.link.rstrip("/").rsplit("/", 1)[1]
    invitation_accept(token=token, user=newcomer)
    added = _last(workspace, "member.added")
    assert (added.actor_type, added.actor_id) == ("user", "new@example.com")
    assert added.target_id == "new@example.com"
    assert added.changes == {"role": "member", "invitation": created.invitation.pk}

    for entry in _entries(workspace):
        text = str(entry.changes) + entry.target_id + entry.target_name
        assert token not in text and link.link not in text


def test_roles_transfer_and_removal_are_recorded(workspace, owner, member):
    membership = _membership(workspace, member)
    member_role_change(
        workspace=workspace, membership_id=membership.pk, role="owner", by_user=owner
    )
    changed = _last(workspace, "member.role_changed")
    assert changed.changes == {"role": {"from": "member", "to": "owner"}}
    member_role_change(
        workspace=workspace, membership_id=membership.pk, role="member", by_user=owner
    )

    ownership_transfer(workspace=workspace, membership_id=membership.pk, by_user=owner)
    transferred = _last(workspace, "member.ownership_transferred")
    assert transferred.target_id == "member@example.com"
    assert transferred.changes == {"from": "Olive Owner", "to": "Mo Member"}

    leaver = user_factory(email="leaver@example.com")
    membership_factory(workspace=workspace, user=leaver)
    gone = user_factory(email="gone@example.com")
    membership_factory(workspace=workspace, user=gone)
    api_key_factory(agent=agent_factory(workspace=workspace), scopes=["runs:read"], created_by=gone)

    member_remove(
        workspace=workspace, membership_id=_membership(workspace, gone).pk, by_user=member
    )
    removed = _last(workspace, "member.removed")
    assert removed.target_id == "gone@example.com"
    assert removed.changes == {
        "left": False, "role": "member", "keys_revoked": 1, "invitations_revoked": 0,
    }  # fmt: skip

    member_remove(
        workspace=workspace, membership_id=_membership(workspace, leaver).pk, by_user=leaver
    )
    left = _last(workspace, "member.removed")
    assert (left.target_id, left.changes["left"]) == ("leaver@example.com", True)


def test_a_refused_change_records_nothing(workspace, owner):
    before = AuditEvent.objects.filter(workspace=workspace).count()
    with pytest.raises(Conflict):  # the last owner cannot leave
        member_remove(
            workspace=workspace, membership_id=_membership(workspace, owner).pk, by_user=owner
        )
    assert AuditEvent.objects.filter(workspace=workspace).count() == before


# --- What a removal ends is recorded as if ended by hand (issue 34, section 6) -------------

_ENTRY_FIELDS = (
    "action", "agent_id", "target_type", "target_id", "target_name", "changes", "actor_type",
    "actor_id", "actor_name", "ip",
)  # fmt: skip


def _shape(entry: AuditEvent) -> dict:
    return {name: getattr(entry, name) for name in _ENTRY_FIELDS}


def test_removing_a_member_records_each_revoked_key_as_a_revocation(
    owner_client, workspace, owner, member, agent
):
    """Before: the keys were revoked with no `api_key.revoked` entry, only a count on
    `member.removed`."""
    other_agent = agent_factory(workspace=workspace, name="Sales Agent")
    keys = [
        api_key_factory(agent=agent, scopes=["runs:read"], created_by=member, name="CI")[0],
        api_key_factory(agent=other_agent, scopes=["runs:read"], created_by=member, name="Bot")[0],
    ]
    already = api_key_factory(agent=agent, scopes=["runs:read"], created_by=member, name="Old")[0]
    hand = api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name="Hand")[0]
    assert owner_client.post(f"/api-keys/{already.pk}/revoke/", REMOTE_ADDR="203.0.113.9")
    assert owner_client.post(f"/api-keys/{hand.pk}/revoke/", REMOTE_ADDR="203.0.113.9")
    by_hand = _shape(_last(workspace, "api_key.revoked"))

    answer = owner_client.post(
        f"/team/members/{_membership(workspace, member).pk}/remove/", REMOTE_ADDR="203.0.113.9"
    )
    assert answer.status_code in (200, 302)

    revoked = {
        entry.target_id: entry
        for entry in AuditEvent.objects.filter(workspace=workspace, action="api_key.revoked")
        if entry.target_id not in (already.pk, hand.pk)
    }
    assert set(revoked) == {key.pk for key in keys}
    # One each: the key revoked earlier is not revoked (nor recorded) again.
    assert AuditEvent.objects.filter(action="api_key.revoked", target_id=already.pk).count() == 1
    for key in keys:
        key.refresh_from_db()
        assert key.revoked_at is not None
        assert _shape(revoked[key.pk]) == {
            **by_hand,
            "agent_id": key.agent_id,
            "target_id": key.pk,
            "target_name": key.name,
            "changes": {"prefix": key.prefix},
        }
    removed = _last(workspace, "member.removed")
    assert removed.changes["keys_revoked"] == 2
    # In the removal's transaction, beside its entry.
    assert all(entry.request_id == removed.request_id for entry in revoked.values())


def test_removing_a_member_records_each_invitation_they_sent_as_revoked(workspace, owner, member):
    membership = _membership(workspace, member)
    member_role_change(
        workspace=workspace, membership_id=membership.pk, role="owner", by_user=owner
    )
    sent = [
        invitation_create(workspace=workspace, by_user=member, role="member", site_url=SITE),
        invitation_create(
            workspace=workspace, by_user=member, role="member", email="a@example.com", site_url=SITE
        ),
    ]
    member_remove(workspace=workspace, membership_id=membership.pk, by_user=owner)
    entries = AuditEvent.objects.filter(workspace=workspace, action="member.invitation_revoked")
    assert sorted(entry.target_id for entry in entries) == sorted(
        created.invitation.pk for created in sent
    )
    assert _last(workspace, "member.removed").changes["invitations_revoked"] == 2


def test_inviting_an_address_again_records_the_replaced_invitation_as_revoked(workspace, owner):
    first = invitation_create(
        workspace=workspace, by_user=owner, role="member", email="a@example.com", site_url=SITE
    )
    invitation_create(
        workspace=workspace, by_user=owner, role="owner", email="a@example.com", site_url=SITE
    )
    (entry,) = AuditEvent.objects.filter(workspace=workspace, action="member.invitation_revoked")
    assert (entry.target_id, entry.target_name) == (first.invitation.pk, "a@example.com")
