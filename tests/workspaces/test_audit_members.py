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
