"""The team of a workspace: roles, removal and leaving, ownership, and an operator's offboarding
(invitations are in `invitations`, the checks every team change makes in `team_checks`). One
service per transition, each checking its precondition; the console's Team page, the invitation page and the
admin all end here, so every change of a team passes through one of these functions.

Rules (docs/team.md):
- only owners manage the team; any member may leave;
- a workspace always keeps an owner: demoting, removing or leaving as its last owner is a
  Conflict (transfer ownership first);
- a person who leaves or is removed loses at once everything that acts as them there: the API
  keys they created (revoked through `api_key_revoke_recorded`, tombstoned in the key cache, so
  the browser tokens those keys minted die with them), the pending invitations they sent, and,
  through the `member_removed` announcement, what other apps hold for them (connected
  applications). Each of those ends with its own audit entry, as if ended by hand
  (`api_key.revoked`, `member.invitation_revoked`, `connected_app.disconnected`), beside the
  removal's `member.removed`. Their console session stops showing the workspace on its next
  request, since every console request reads the membership again.
"""

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from apps.common.errors import BadRequest, Conflict
from apps.workspaces.audit import audit_diff
from apps.workspaces.events import MemberRemoved, announce_member_removed
from apps.workspaces.models import ApiKey, Membership, Workspace
from apps.workspaces.rendering import person_name
from apps.workspaces.services.api_keys import api_key_revoke_recorded
from apps.workspaces.services.invitations import _invitations_revoke, _open_invitations
from apps.workspaces.services.team_checks import (
    _audit_member,
    _lock_workspace,
    _membership,
    _other_owner_check,
    _owner_check,
    _role_check,
)


def member_role_change(*, workspace: Workspace, membership_id, role: str, by_user) -> Membership:
    """Make a member an owner or an owner a member. The last owner cannot be demoted. A demoted
    owner's keys keep working but lose the owner permissions at once (they are checked against
    the creator's role on every request)."""
    role = _role_check(role)
    with transaction.atomic():
        _lock_workspace(workspace)
        _owner_check(workspace=workspace, by_user=by_user)
        membership = _membership(workspace=workspace, membership_id=membership_id)
        if membership.role == role:
            raise Conflict(f"{person_name(membership.user)} is already {_a(role)}.")
        if role == Membership.Role.MEMBER:
            _other_owner_check(membership, doing="demoting")
        before = membership.role
        membership.role = role
        membership.save(update_fields=["role"])
        _audit_member(
            membership, "member.role_changed", changes=audit_diff({"role": before}, {"role": role})
        )
    return membership


def _a(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"


@dataclass(frozen=True)
class MemberRemoval:
    user: Any  # the AUTH_USER_MODEL row
    keys_revoked: int
    invitations_revoked: int


def member_remove(*, workspace: Workspace, membership_id, by_user) -> MemberRemoval:
    """Remove a member (owners), or leave (anyone, their own membership). The last owner can do
    neither. Everything that acts as the person in this workspace ends in the same transaction
    (see the module's rules); if the key cache cannot take the revocation, nothing changes."""
    with transaction.atomic():
        _lock_workspace(workspace)
        membership = _membership(workspace=workspace, membership_id=membership_id)
        leaving = by_user is not None and membership.user_id == by_user.pk
        if not leaving:
            _owner_check(workspace=workspace, by_user=by_user)
        _other_owner_check(membership, doing="leaving" if leaving else "removal")
        user = membership.user
        keys = list(
            ApiKey.objects.filter(
                agent__workspace=workspace,
                created_by_id=user.pk,
                kind=ApiKey.Kind.KEY,
                revoked_at__isnull=True,
            )
        )
        for key in keys:
            api_key_revoke_recorded(key)
        invitations = _invitations_revoke(
            _open_invitations(workspace).filter(created_by_id=user.pk)
        )
        _audit_member(
            membership,
            "member.removed",
            changes={
                "left": leaving,
                "role": membership.role,
                "keys_revoked": len(keys),
                "invitations_revoked": invitations,
            },
        )
        membership.delete()
        announce_member_removed(
            MemberRemoved(
                workspace=workspace,
                user_id=user.pk,
                by_user_id=by_user.pk if by_user is not None else None,
            )
        )
    return MemberRemoval(user=user, keys_revoked=len(keys), invitations_revoked=invitations)


def ownership_transfer(*, workspace: Workspace, membership_id, by_user) -> Membership:
    """An owner hands the workspace to a member: the member becomes an owner and the owner a
    member, in one step."""
    if by_user is None:
        raise BadRequest("Ownership is transferred by an owner; an operator changes roles.")
    with transaction.atomic():
        _lock_workspace(workspace)
        _owner_check(workspace=workspace, by_user=by_user)
        target = _membership(workspace=workspace, membership_id=membership_id)
        if target.user_id == by_user.pk:
            raise Conflict("You already own this workspace; choose another member.")
        if target.is_owner:
            raise Conflict(
                f"{person_name(target.user)} is already an owner. To step down, change your own "
                "role to member."
            )
        target.role = Membership.Role.OWNER
        target.save(update_fields=["role"])
        Membership.objects.filter(workspace=workspace, user_id=by_user.pk).update(
            role=Membership.Role.MEMBER
        )
        _audit_member(
            target,
            "member.ownership_transferred",
            changes={"from": person_name(by_user), "to": person_name(target.user)},
        )
    return target


@dataclass(frozen=True)
class PersonOffboarding:
    workspaces_left: int
    keys_revoked: int
    # Workspaces the person still owns alone: they stay, and the account stays active.
    refused: list[str]
    deactivated: bool


def person_offboard(*, user) -> PersonOffboarding:
    """An operator's "this person is gone": removed from every workspace (each removal as
    `member_remove` does it), then the account deactivated, which ends all their sessions. A
    workspace they are the last owner of is left as it is and named, and the account stays
    active until an owner is found for it."""
    left = keys = 0
    refused = []
    for membership in Membership.objects.filter(user=user).select_related("workspace"):
        try:
            removal = member_remove(
                workspace=membership.workspace, membership_id=membership.pk, by_user=None
            )
        except Conflict:
            refused.append(membership.workspace.name)
            continue
        left += 1
        keys += removal.keys_revoked
    if not refused and user.is_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
    return PersonOffboarding(
        workspaces_left=left, keys_revoked=keys, refused=refused, deactivated=not refused
    )
