"""Reads for connected applications and the consent page."""

from django.db.models import QuerySet

from apps.mcp_server.models import ConnectedApplication
from apps.workspaces.models import Agent

CONNECTION_STATUSES = ("active", "revoked")


def connected_app_list(*, agent: Agent, status: str = "") -> QuerySet[ConnectedApplication]:
    """The Agent's connected applications, all or only the live ("active") or disconnected
    ("revoked") ones; the caller orders and pages them."""
    connections = ConnectedApplication.objects.filter(agent=agent).select_related(
        "application", "user", "grant_key"
    )
    if status == "active":
        connections = connections.filter(revoked_at__isnull=True)
    elif status == "revoked":
        connections = connections.filter(revoked_at__isnull=False)
    return connections


def connected_app_get(*, agent: Agent, connection_id: str) -> ConnectedApplication | None:
    return (
        ConnectedApplication.objects.filter(agent=agent, pk=connection_id)
        .select_related("application", "user", "grant_key")
        .first()
    )
