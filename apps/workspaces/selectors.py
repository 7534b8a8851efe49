"""Reads for workspaces, Agents and API keys."""

from django.db.models import QuerySet

from apps.common.errors import NotFound
from apps.workspaces.models import Agent, ApiKey, Membership


def membership_get(*, user, workspace_id: str) -> Membership | None:
    return Membership.objects.filter(user=user, workspace_id=workspace_id).first()


def agent_list_for_user(*, user) -> QuerySet[Agent]:
    return (
        Agent.objects.filter(workspace__memberships__user=user, status=Agent.Status.ACTIVE)
        .select_related("workspace")
        .order_by("workspace__name", "name")
    )


def api_key_list(*, agent: Agent) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(agent=agent).select_related("created_by").order_by("-created_at")


def is_workspace_owner(*, user_id: int | None, workspace_id: str) -> bool:
    if user_id is None:
        return False
    return Membership.objects.filter(
        user_id=user_id, workspace_id=workspace_id, role=Membership.Role.OWNER
    ).exists()


def agent_get_active(*, workspace_id: str, agent_id: str) -> Agent:
    """An active Agent of the workspace; any other id is not found."""
    agent = (
        Agent.objects.select_related("workspace")
        .filter(pk=agent_id, workspace_id=workspace_id, status=Agent.Status.ACTIVE)
        .first()
        if "\x00" not in agent_id
        else None
    )
    if agent is None:
        raise NotFound(f"No Agent {agent_id!r} in this workspace.")
    return agent


def agent_allowed_origins(*, agent: Agent) -> frozenset[str]:
    """Origins whose pages may read /v1/me with the Agent's browser tokens, normalized
    (lower-case, no trailing slash) so they compare with a request's `Origin` as is."""
    origins = agent.allowed_origins if isinstance(agent.allowed_origins, list) else []
    return frozenset(
        origin.strip().rstrip("/").lower() for origin in origins if isinstance(origin, str)
    )
