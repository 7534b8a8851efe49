"""Writes for workspaces and their memberships."""

from django.db import transaction

from apps.workspaces.models import Membership, Workspace


def workspace_create(*, name: str, owner) -> Workspace:
    with transaction.atomic():
        workspace = Workspace.objects.create(name=name)
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace
