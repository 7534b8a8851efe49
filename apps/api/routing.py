"""Both path forms of contract section 4: `/v1/<path>` and `/v1/agents/{agentId}/<path>`."""

from collections.abc import Callable
from typing import NamedTuple

from django.http import HttpResponseBase
from django.urls import URLPattern, path


class Route(NamedTuple):
    route: str
    view: Callable[..., HttpResponseBase]
    name: str


def both_forms(routes: list[Route]) -> list[URLPattern]:
    patterns = []
    for route in routes:
        patterns.append(path(route.route, route.view, name=route.name))
        patterns.append(
            path(f"agents/<str:agent_id>/{route.route}", route.view, name=f"agent-{route.name}")
        )
    return patterns


def agent_form_only(routes: list[Route]) -> list[URLPattern]:
    return [
        path(f"agents/<str:agent_id>/{r.route}", r.view, name=f"agent-{r.name}") for r in routes
    ]


def plain_form_only(routes: list[Route]) -> list[URLPattern]:
    """Routes served only as `/v1/<path>`: their path already names the Agent (Agent
    management), none applies (workspaces), or the credential fixes it (browser tokens)."""
    return [path(r.route, r.view, name=r.name) for r in routes]
