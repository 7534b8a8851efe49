"""`manage.py retention_set WORKSPACE_ID --days 30|90|365|forever`: a workspace's retention."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from apps.common.errors import BadRequest
from apps.retention.services import retention_policy_set
from apps.workspaces.models import Workspace


class Command(BaseCommand):
    help = "Set how long a workspace keeps its activity (30, 90, 365 days or forever)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("workspace_id")
        parser.add_argument("--days", required=True, help="30, 90, 365 or forever")

    def handle(self, *args, workspace_id: str, days: str, **options) -> None:
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is None:
            raise CommandError(f"no workspace {workspace_id}")
        if days == "forever":
            activity_days = None
        elif days.isdigit():
            activity_days = int(days)
        else:
            raise CommandError("--days must be 30, 90, 365 or forever")
        try:
            retention_policy_set(workspace=workspace, activity_days=activity_days)
        except BadRequest as exc:
            raise CommandError(str(exc)) from None
        kept = "forever" if activity_days is None else f"{activity_days} days"
        self.stdout.write(f"ok: {workspace_id} keeps its activity {kept}")
