"""Reads for workspaces, Agents, their revisions, API keys and the audit log."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import CharField, Count, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Now

from apps.common.errors import BadRequest, NotFound
from apps.workspaces.audit import AUDIT_ACTIONS
from apps.workspaces.models import (
    ActorType,
    Agent,
    AgentRevision,
    ApiKey,
    AuditEvent,
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


API_KEY_STATUSES = ("active", "expired", "revoked")


def api_key_filter(
    keys: QuerySet[ApiKey], *, status: str = "", search: str = ""
) -> QuerySet[ApiKey]:
    """The keys of the API keys page's filters: a status (active, expired — not revoked but
    past its expiry — or revoked) and a name search. An unknown status filters nothing."""
    if status == "revoked":
        keys = keys.filter(revoked_at__isnull=False)
    elif status == "expired":
        keys = keys.filter(revoked_at__isnull=True, expires_at__lte=Now())
    elif status == "active":
        keys = keys.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=Now())
        )
    if search:
        keys = keys.filter(name__icontains=search)
    return keys


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


def member_list(*, workspace_id: str, role: str = "", search: str = "") -> QuerySet[Membership]:
    """A workspace's memberships with their people and how many active API keys each created
    there (removal revokes them), optionally of one role and whose name or e-mail address
    contains `search`; the caller orders and pages them."""
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
    members = Membership.objects.filter(workspace_id=workspace_id)
    if role:
        members = members.filter(role=role)
    for word in search.split():
        members = members.filter(
            Q(user__first_name__icontains=word)
            | Q(user__last_name__icontains=word)
            | Q(user__email__icontains=word)
            | Q(user__username__icontains=word)
        )
    return members.select_related("user").annotate(
        active_key_count=Coalesce(Subquery(active_keys), 0)
    )


def invitation_list_open(*, workspace_id: str) -> QuerySet[Invitation]:
    """A workspace's invitations neither accepted nor revoked (expired ones included, so an
    owner sees them lapse); the caller orders and pages them."""
    return Invitation.objects.filter(
        workspace_id=workspace_id, accepted_at__isnull=True, revoked_at__isnull=True
    ).select_related("created_by")


# --- The audit log ---------------------------------------------------------------------------

AUDIT_FILTERS = ("action", "actor_type", "actor_id", "target_id", "agent_id", "since", "until")


@dataclass(frozen=True)
class AuditFilters:
    """What an audit log query keeps: every field optional; `since` inclusive, `until`
    exclusive. The API and the console parse their query strings into it alike."""

    action: str = ""  # an action, or a group ("api_key": every api_key.* action)
    actor_type: str = ""
    actor_id: str = ""
    target_id: str = ""
    agent_id: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def is_empty(self) -> bool:
        return self == AuditFilters()


def _audit_time(name: str, raw: str, *, end_of_day: bool) -> datetime:
    """An ISO 8601 date-time with its zone, or a date (a whole UTC day: `until` takes the
    day in, so "until 2026-03-31" keeps the 31st)."""
    text = raw.strip()
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text).replace(tzinfo=UTC)
            return day + timedelta(days=1) if end_of_day else day
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            f"{name}: give an ISO 8601 date (2026-03-31) or date-time with its zone "
            f"(2026-03-31T12:00:00Z); got {raw!r}."
        ) from None
    if value.tzinfo is None:
        raise BadRequest(f"{name}: give the time with its zone, such as 2026-03-31T12:00:00Z.")
    return value.astimezone(UTC)


def audit_filters_parse(params) -> AuditFilters:
    """The filters of a query string (`params.get`); a value that names nothing is a 400."""
    values = {name: (params.get(name) or "").strip() for name in AUDIT_FILTERS}
    for name, value in values.items():
        if len(value) > 254 or "\x00" in value:
            raise BadRequest(f"{name}: not a value this log holds.")
    action = values["action"]
    groups = {name.split(".", 1)[0] for name in AUDIT_ACTIONS}
    if action and action not in AUDIT_ACTIONS and action not in groups:
        raise BadRequest(
            f"action: unknown action {action!r}; give one of the actions in the API "
            f"reference, or a group such as {', '.join(sorted(groups)[:4])}."
        )
    if values["actor_type"] and values["actor_type"] not in ActorType.values:
        raise BadRequest(f"actor_type: must be one of {', '.join(ActorType.values)}.")
    since = _audit_time("since", values["since"], end_of_day=False) if values["since"] else None
    until = _audit_time("until", values["until"], end_of_day=True) if values["until"] else None
    if since and until and since >= until:
        raise BadRequest("since: must be before until.")
    return AuditFilters(
        action=action,
        actor_type=values["actor_type"],
        actor_id=values["actor_id"],
        target_id=values["target_id"],
        agent_id=values["agent_id"],
        since=since,
        until=until,
    )


def audit_event_list(*, workspace_id: str, filters: AuditFilters) -> QuerySet[AuditEvent]:
    """A workspace's audit entries that match `filters`; the caller orders (newest first,
    keyset) and pages them, on the (workspace, created_at, id) index or its action/target
    siblings."""
    queryset = AuditEvent.objects.filter(workspace_id=workspace_id)
    if filters.action in AUDIT_ACTIONS:
        queryset = queryset.filter(action=filters.action)
    elif filters.action:
        queryset = queryset.filter(action__startswith=f"{filters.action}.")
    for name in ("actor_type", "actor_id", "target_id", "agent_id"):
        if value := getattr(filters, name):
            queryset = queryset.filter(**{name: value})
    if filters.since is not None:
        queryset = queryset.filter(created_at__gte=filters.since)
    if filters.until is not None:
        queryset = queryset.filter(created_at__lt=filters.until)
    return queryset
