"""What every team change checks first: that the one asking owns the workspace, that the
workspace keeps an owner, that a role exists; the workspace lock that runs one team's changes one
at a time; and a member's audit entry."""

from apps.common.errors import BadRequest, Conflict, InsufficientScope, NotFound
from apps.workspaces.audit import audit_record
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.rendering import person_name

# What InsufficientScope names when a member tries an owner's team change (no API key scope
# covers the team: it is managed in the console).
OWNER_REQUIRED = "workspace:owner"
ROLES = tuple(Membership.Role.values)


def _lock_workspace(workspace: Workspace) -> None:
    """Team changes of one workspace run one at a time: two owners demoting each other at once
    must not leave it without an owner."""
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()


def _owner_check(*, workspace: Workspace, by_user) -> None:
    """`by_user=None` is an operator (the admin, a command), who may do anything."""
    if by_user is None:
        return
    if not Membership.objects.filter(
        workspace=workspace, user_id=by_user.pk, role=Membership.Role.OWNER
    ).exists():
        raise InsufficientScope(OWNER_REQUIRED, "Only workspace owners can manage the team.")


def _membership(*, workspace: Workspace, membership_id) -> Membership:
    membership = (
        Membership.objects.select_related("user")
        .filter(workspace=workspace, pk=membership_id)
        .first()
        if str(membership_id).isdigit()
        else None
    )
    if membership is None:
        raise NotFound("No such member of this workspace.")
    return membership


def _other_owner_check(membership: Membership, *, doing: str) -> None:
    others = Membership.objects.filter(
        workspace_id=membership.workspace_id, role=Membership.Role.OWNER
    ).exclude(pk=membership.pk)
    if membership.is_owner and not others.exists():
        raise Conflict(
            f"A workspace needs an owner: {doing} is not possible for its last owner. "
            "Make someone else an owner (or transfer ownership) first."
        )


def _role_check(role: str) -> str:
    if role not in ROLES:
        raise BadRequest(f"role: choose one of {', '.join(ROLES)}.")
    return role


def _audit_member(membership: Membership, action: str, **extra) -> None:
    audit_record(
        workspace_id=membership.workspace_id,
        action=action,
        target_type="member",
        target_id=str(membership.user.email or membership.user.get_username()),
        target_name=person_name(membership.user),
        **extra,
    )
