"""Reads for connected applications and the consent page."""

from django.db.models import QuerySet

from apps.mcp_server.models import ConnectedApplication
from apps.workspaces.models import Agent


def connected_app_list(*, agent: Agent) -> QuerySet[ConnectedApplication]:
    """The Agent's connected applications, live ones first, newest first within each."""
    return (
        ConnectedApplication.objects.filter(agent=agent)
        .select_related("application", "user", "grant_key")
        .order_by("revoked_at", "-created_at")
    )


def connected_app_get(*, agent: Agent, connection_id: str) -> ConnectedApplication | None:
    return (
        ConnectedApplication.objects.filter(agent=agent, pk=connection_id)
        .select_related("application", "user", "grant_key")
        .first()
    )
