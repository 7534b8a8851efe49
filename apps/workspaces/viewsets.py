"""The base every /v1 view of an Agent stands on: the platform's viewset (apps.api.views), with
the request's Agent resolved from its credential."""

from typing import cast

from apps.api.views import ApiViewSet
from apps.common.errors import NotFound
from apps.workspaces.credentials import KeyCredential
from apps.workspaces.models import Agent


class AgentViewSet(ApiViewSet):
    """A viewset whose every request is scoped to one Agent.

    `required_scopes` maps each action to the permission it needs. The Agent is the key's own,
    or, on `/v1/agents/{agentId}/...`, the one named there: another Agent is `not_found`.
    Views with `agent_scope = "workspace"` (webhooks) accept any active Agent of the key's
    workspace.
    """

    agent_scope = "key"
    agent: Agent

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        self.agent = self.resolve_agent(kwargs.get("agent_id"))

    def resolve_agent(self, agent_id: str | None) -> Agent:
        key_agent = self.credential.agent
        if agent_id is None or agent_id == key_agent.pk:
            return key_agent
        if self.agent_scope == "workspace":
            agent = Agent.objects.filter(
                pk=agent_id, workspace_id=key_agent.workspace_id, status=Agent.Status.ACTIVE
            ).first()
            if agent is not None:
                return agent
        raise NotFound("No such Agent for this API key.")

    @property
    def credential(self) -> KeyCredential:
        # Every kind registered today is backed by a workspace key (apps.workspaces.credentials).
        return cast(KeyCredential, self.request.auth)
