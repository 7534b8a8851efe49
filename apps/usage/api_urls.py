"""Routes of this app under /v1: `/v1/usage` (the workspace) and its agent-scoped form (one
Agent's usage)."""

from apps.api.routing import Route
from apps.usage.api import UsageViewSet

routes: list[Route] = [Route("usage", UsageViewSet.as_view({"get": "retrieve"}), "usage")]
agent_only_routes: list[Route] = []
