"""Factories for the workspaces models. Each app keeps its own in tests/<app>/factories.py."""

import itertools

from django.contrib.auth import get_user_model

from apps.workspaces.models import Agent, Membership, Workspace
from apps.workspaces.services import agent_create, api_key_create

_counter = itertools.count(1)


def user_factory(*, email: str | None = None, password: str = "correct-horse-battery", **extra):
    n = next(_counter)
    email = email or f"person{n}@example.com"
    user = get_user_model().objects.create_user(
        username=email, email=email, password=password, **extra
    )
    user.raw_password = password
    return user


def workspace_factory(*, name: str | None = None, owner=None) -> Workspace:
    workspace = Workspace.objects.create(name=name or f"Workspace {next(_counter)}")
    if owner is not None:
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


def membership_factory(*, workspace: Workspace, user, role: str = Membership.Role.MEMBER):
    return Membership.objects.create(workspace=workspace, user=user, role=role)


def agent_factory(*, workspace: Workspace, name: str | None = None, **configuration) -> Agent:
    """Through the service, so the Agent has its revision 1 like a real one."""
    return agent_create(
        workspace=workspace, name=name or f"Agent {next(_counter)}", **configuration
    )


def api_key_factory(*, agent: Agent, scopes, created_by=None, name: str = "Test key"):
    """Returns (ApiKey, raw secret string)."""
    return api_key_create(agent=agent, name=name, scopes=scopes, created_by=created_by)
