"""Matrices over every operation in the OpenAPI document.

- A key holding every permission except the one an operation needs gets 403
  `insufficient_scope` with the challenge naming that permission.
- On the agent-scoped path form, another workspace's Agent is 404 `not_found`.
Operations added later are covered automatically because the matrix reads the document.
"""

import re

import pytest
from django.test import Client

from apps.api.scopes import ALL_SCOPES
from tests.api.openapi import generated_document

pytestmark = pytest.mark.django_db

_PARAM = re.compile(r"\{([^}]+)\}")


def operations():
    document = generated_document()
    for path, item in sorted(document["paths"].items()):
        for method, op in item.items():
            if method in {"get", "post", "patch", "put", "delete"}:
                yield pytest.param(
                    path, method, op.get("x-required-scope"), id=f"{method.upper()} {path}"
                )


OPERATIONS = list(operations())
SCOPED = [op for op in OPERATIONS if op.values[2] is not None]
AGENT_FORM = [
    op for op in OPERATIONS if "{agent_id}" in op.values[0] or "{agentId}" in op.values[0]
]


def _owner_only(param) -> bool:
    from apps.api.scopes import OWNER_SCOPES

    return param.values[2] in OWNER_SCOPES


OWNER_ONLY = [op for op in OPERATIONS if _owner_only(op)]


def concrete(path: str, agent_id: str) -> str:
    def fill(match: re.Match) -> str:
        return agent_id if match.group(1) in ("agent_id", "agentId") else "unknown_id_123"

    return _PARAM.sub(fill, path)


def call(client: Client, method: str, url: str, raw_key: str):
    return getattr(client, method)(url, headers={"Authorization": f"Bearer {raw_key}"})


@pytest.mark.parametrize(("path", "method", "scope"), SCOPED)
def test_missing_scope_is_insufficient_scope(path, method, scope, make_api):
    client = make_api([s for s in ALL_SCOPES if s != scope])
    response = call(Client(), method, concrete(path, client.key.agent_id), client.raw_key)
    assert response.status_code == 403, response.content
    assert response.json()["name"] == "insufficient_scope"
    assert scope in response.json()["message"]
    challenge = response["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert f'scope="{scope}"' in challenge


@pytest.mark.parametrize(("path", "method", "scope"), AGENT_FORM)
def test_other_workspaces_agent_is_not_found(path, method, scope, api, other_agent):
    response = call(Client(), method, concrete(path, other_agent.pk), api.raw_key)
    assert response.status_code == 404, response.content
    assert response.json()["name"] == "not_found"


@pytest.mark.parametrize(("path", "method", "scope"), OWNER_ONLY)
def test_owner_scopes_need_a_key_created_by_an_owner(path, method, scope, make_api, member):
    client = make_api(list(ALL_SCOPES), created_by=member)
    response = call(Client(), method, concrete(path, client.key.agent_id), client.raw_key)
    assert response.status_code == 403
    assert response.json()["name"] == "insufficient_scope"
    assert f'scope="{scope}"' in response["WWW-Authenticate"]
