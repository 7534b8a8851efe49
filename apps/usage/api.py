"""GET /v1/usage and /v1/agents/{agentId}/usage (an extension; scope `usage:read`).

Thin: parse the period, resolve the Agent filter within the key's workspace, read the rollup.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.api.views import json_response
from apps.common.errors import BadRequest, NotFound
from apps.usage import selectors
from apps.usage.rendering import usage_to_dict
from apps.usage.serializers import UsageOut
from apps.workspaces.models import Agent
from apps.workspaces.viewsets import AgentViewSet

QUERY_PARAMETERS = [
    OpenApiParameter(
        "from",
        OpenApiTypes.DATE,
        description="First UTC day (YYYY-MM-DD), included. Default: the first day of `to`'s month.",
    ),
    OpenApiParameter(
        "to",
        OpenApiTypes.DATE,
        description="Last UTC day, included. Default: today. At most 366 days after `from`.",
    ),
    OpenApiParameter(
        "granularity",
        OpenApiTypes.STR,
        enum=list(selectors.GRANULARITIES),
        description="`day` (default) or `week` (ISO weeks, Monday first) for `series`.",
    ),
    OpenApiParameter(
        "agent_id",
        OpenApiTypes.STR,
        description="Only this Agent of the key's workspace (404 for any other).",
    ),
]


class UsageViewSet(AgentViewSet):
    """Usage is the workspace's: any Agent of the key's workspace, archived ones included."""

    required_scopes = {"retrieve": "usage:read"}
    extension_actions = ("retrieve",)
    error_statuses = {"retrieve": (404,)}
    openapi_tags = ["Usage"]

    def resolve_agent(self, agent_id: str | None) -> Agent:
        if agent_id is None:
            return super().resolve_agent(None)
        return selectors.usage_agent_get(
            workspace=super().resolve_agent(None).workspace, agent_id=agent_id
        )

    @extend_schema(
        summary="Workspace usage",
        description="Runs, failed runs, tokens by kind, credits charged and p50/p95 turn "
        "latency of the key's workspace over a period of UTC days (default: this month to "
        "date), in total, per Agent and per day or week, with the monthly credit limit and "
        "the API rate limit. Served from a daily rollup that recording keeps exact. On "
        "`/v1/agents/{agentId}/usage` the figures are that Agent's.",
        parameters=QUERY_PARAMETERS,
        responses={200: UsageOut},
    )
    def retrieve(self, request, agent_id: str | None = None):
        period = selectors.period_parse(request.query_params)
        workspace = self.agent.workspace
        agent = self.agent if agent_id is not None else None
        wanted = request.query_params.get("agent_id") or None
        if wanted is not None:
            if agent is not None and wanted != agent.pk:
                raise BadRequest("agent_id: Differs from the Agent of the path; send one of them.")
            try:
                agent = selectors.usage_agent_get(workspace=workspace, agent_id=wanted)
            except NotFound:
                raise NotFound(f"agent_id: No Agent {wanted[:64]!r} in this workspace.") from None
        usage = selectors.usage_get(workspace=workspace, period=period, agent=agent)
        return json_response(usage_to_dict(usage))
