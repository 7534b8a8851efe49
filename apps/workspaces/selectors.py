"""Reads for workspaces, Agents and API keys."""

from django.db.models import QuerySet

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
