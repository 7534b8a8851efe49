"""Writes for workspaces and their memberships."""

from django.db import transaction

from apps.workspaces.audit import audit_record
from apps.workspaces.models import Membership, Workspace


def workspace_create(*, name: str, owner) -> Workspace:
    with transaction.atomic():
        workspace = Workspace.objects.create(name=name)
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
        audit_record(
            workspace_id=workspace.pk,
            action="workspace.created",
            target_type="workspace",
            target_id=workspace.pk,
            target_name=workspace.name,
            changes={"name": workspace.name, "owner": owner.email or owner.get_username()},
        )
    return workspace
