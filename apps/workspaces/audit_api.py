"""GET /v1/audit_events: the workspace's audit log, filtered (docs/audit-log.md)."""

from drf_spectacular.utils import OpenApiParameter

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.common.keyset import Keyset
from apps.workspaces import selectors
from apps.workspaces.models import ActorType
from apps.workspaces.rendering import audit_event_to_dict
from apps.workspaces.serializers import AuditEventListOut
from apps.workspaces.viewsets import AgentViewSet

AUDIT_KEYSET = Keyset("audit_events", "created_at", descending=True)


def _audit_parameter(name: str, description: str, **schema) -> OpenApiParameter:
    return OpenApiParameter(name, {"type": "string", **schema}, description=description)


AUDIT_PARAMETERS = [
    _audit_parameter(
        "action",
        "One action (`api_key.revoked`), or a group: the part before the dot (`api_key`) "
        "keeps every action of it.",
    ),
    _audit_parameter("actor_type", "Who acted.", enum=list(ActorType.values)),
    _audit_parameter(
        "actor_id", "One actor: a user's email address, a key's id, an application's key id."
    ),
    _audit_parameter("target_id", "Everything that happened to one thing (a key, a document)."),
    _audit_parameter("agent_id", "Only entries about this Agent."),
    _audit_parameter(
        "since",
        "Entries at or after this ISO 8601 date-time (with its zone) or date (UTC).",
        format="date-time",
    ),
    _audit_parameter(
        "until",
        "Entries before this date-time; a date keeps that whole day (UTC).",
        format="date-time",
    ),
]


class AuditEventViewSet(AgentViewSet):
    """GET /v1/audit_events: the workspace's audit log (docs/audit-log.md)."""

    required_scopes = {"list": "audit_log:read"}
    extension_actions = ("list",)
    openapi_tags = ["Audit log"]

    @list_operation(
        summary="List audit events (extension)",
        description="Every change made to the key's workspace, newest first: who (a person, "
        "an API key, a connected application or the system), when, from which address, what "
        "and which fields changed, before and after. Never a secret. An unknown action or a "
        "malformed time is 400.",
        parameters=[*AUDIT_PARAMETERS, *PAGE_PARAMETERS],
        responses={200: AuditEventListOut},
    )
    def list(self, request):
        filters = selectors.audit_filters_parse(request.query_params)
        queryset = selectors.audit_event_list(workspace_id=self.agent.workspace_id, filters=filters)
        return self.paginated(queryset, keyset=AUDIT_KEYSET, render=audit_event_to_dict)
