"""Reads for workspaces, Agents, their revisions and API keys."""

from django.db.models import CharField, Count, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Now

from apps.common.errors import BadRequest, NotFound
from apps.workspaces.models import (
    Agent,
    AgentRevision,
    ApiKey,
    Invitation,
    Membership,
    Workspace,
)


def membership_get(*, user, workspace_id: str) -> Membership | None:
    return Membership.objects.filter(user=user, workspace_id=workspace_id).first()


def agent_list_for_user(*, user) -> QuerySet[Agent]:
    return (
        Agent.objects.filter(workspace__memberships__user=user, status=Agent.Status.ACTIVE)
        .select_related("workspace")
        .order_by("workspace__name", "name")
    )


def agent_list(*, workspace_id: str, status: str | None = None) -> QuerySet[Agent]:
    """A workspace's Agents, optionally of one status; the caller orders and pages them."""
    queryset = Agent.objects.filter(workspace_id=workspace_id)
    if status:
        if status not in Agent.Status.values:
            raise BadRequest(f"status must be one of {', '.join(Agent.Status.values)}.")
        queryset = queryset.filter(status=status)
    return queryset


def agent_get(*, workspace_id: str, agent_id: str) -> Agent:
    """An Agent of the workspace, active or archived; any other id is not_found."""
    agent = Agent.objects.filter(workspace_id=workspace_id, pk=agent_id).first()
    if agent is None:
        raise NotFound("No such Agent in this workspace.")
    return agent


def agent_revision_list(*, agent: Agent) -> QuerySet[AgentRevision]:
    """An Agent's revisions; the caller orders (newest number first) and pages them."""
    return AgentRevision.objects.filter(agent=agent)


def agent_revision_get(*, agent: Agent, revision_id: str) -> AgentRevision:
    revision = AgentRevision.objects.filter(agent=agent, pk=revision_id).first()
    if revision is None:
        raise NotFound("No such revision for this Agent.")
    return revision


def api_key_list(*, agent: Agent) -> QuerySet[ApiKey]:
    """The Agent's API keys; connected applications have their own list (apps.mcp_server)."""
    return (
        ApiKey.objects.filter(agent=agent, kind=ApiKey.Kind.KEY)
        .select_related("created_by")
        .order_by("-created_at")
    )


def owned_workspace_ids(*, user) -> set[str]:
    return set(
        Membership.objects.filter(user=user, role=Membership.Role.OWNER).values_list(
            "workspace_id", flat=True
        )
    )


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


def workspace_list_for_key(*, key: ApiKey) -> QuerySet[Workspace]:
    """A key is granted exactly its own Agent's workspace. Rows carry `role`: its creator's
    role there now (None when the creator left the workspace or the key has no creator)."""
    workspaces = Workspace.objects.filter(pk=key.agent.workspace_id)
    if key.created_by_id is None:
        return workspaces.annotate(role=Value(None, output_field=CharField()))
    role = Membership.objects.filter(workspace=OuterRef("pk"), user_id=key.created_by_id)
    return workspaces.annotate(role=Subquery(role.values("role")[:1]))


def member_list(*, workspace_id: str) -> QuerySet[Membership]:
    """A workspace's memberships with their people and how many active API keys each created
    there (removal revokes them); the caller orders and pages them."""
    active_keys = (
        ApiKey.objects.filter(
            agent__workspace_id=workspace_id,
            created_by_id=OuterRef("user_id"),
            kind=ApiKey.Kind.KEY,
            revoked_at__isnull=True,
        )
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=Now()))
        .order_by()
        .values("created_by_id")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return (
        Membership.objects.filter(workspace_id=workspace_id)
        .select_related("user")
        .annotate(active_key_count=Coalesce(Subquery(active_keys), 0))
    )


def invitation_list_open(*, workspace_id: str) -> QuerySet[Invitation]:
    """A workspace's invitations neither accepted nor revoked (expired ones included, so an
    owner sees them lapse); the caller orders and pages them."""
    return Invitation.objects.filter(
        workspace_id=workspace_id, accepted_at__isnull=True, revoked_at__isnull=True
    ).select_related("created_by")
