"""GET /v1/analytics/steps and /v1/analytics/runs (extension): the analytics rollup read
through the API."""

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.activity import analytics
from apps.api.views import json_response
from apps.workspaces.viewsets import AgentViewSet

_ANALYTICS_PARAMETERS = [
    OpenApiParameter("from", OpenApiTypes.DATE, description="First UTC day (default: 29 days "
                     "before `to`)."),
    OpenApiParameter("to", OpenApiTypes.DATE, description="Last UTC day (default: today); at "
                     "most 366 days in all."),
    OpenApiParameter("by_day", OpenApiTypes.BOOL, description="Also each day's figures."),
]  # fmt: skip


class AnalyticsViewSet(AgentViewSet):
    """GET /v1/analytics/steps and /v1/analytics/runs: figures per tool, model, step name,
    environment or release, from the rollup the recording keeps (apps.activity.analytics)."""

    required_scopes = {"steps": "runs:read", "runs": "runs:read"}
    extension_actions = ("steps", "runs")
    openapi_tags = ["Analytics"]

    def _answer(self, request, *, groups: tuple[str, ...], subject: str):
        query = analytics.query_parse(
            request.query_params, groups=groups, today=timezone.now().date()
        )
        rows = analytics.rollup_read(
            agent_id=self.agent.pk,
            group=query.group,
            first_day=query.first_day,
            last_day=query.last_day,
            by_day=query.by_day,
        )
        return json_response(
            {
                "object": f"{subject}_analytics",
                "group": query.group,
                "from": query.first_day.isoformat(),
                "to": query.last_day.isoformat(),
                "data": [analytics.figures_to_dict(row, by_day=query.by_day) for row in rows],
            }
        )

    @extend_schema(
        summary="Step analytics (extension)",
        description="Per tool, model or step name (`group`) over a period of UTC days: how "
        "many steps, how many failed and the error rate, p50/p95/p99 duration (from a "
        "histogram: within 4.5 %) and tokens, most steps first; `by_day` adds each day's. "
        "Read from a daily rollup the recording keeps exact, never from the steps.",
        parameters=[
            OpenApiParameter("group", OpenApiTypes.STR, enum=list(analytics.STEP_GROUPS)),
            *_ANALYTICS_PARAMETERS,
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def steps(self, request, agent_id: str | None = None):
        return self._answer(request, groups=analytics.STEP_GROUPS, subject="step")

    @extend_schema(
        summary="Run analytics (extension)",
        description='Per environment or release (`group`; runs without one under ""): the '
        "same figures as step analytics, latency being the run's turn latency.",
        parameters=[
            OpenApiParameter("group", OpenApiTypes.STR, enum=list(analytics.RUN_GROUPS)),
            *_ANALYTICS_PARAMETERS,
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def runs(self, request, agent_id: str | None = None):
        return self._answer(request, groups=analytics.RUN_GROUPS, subject="run")
