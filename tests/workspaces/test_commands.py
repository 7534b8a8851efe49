"""The management commands other tooling depends on: exact interfaces."""

import io

import orjson
import pytest
from django.core.management import CommandError, call_command

from apps.api.scopes import ALL_SCOPES
from apps.workspaces.models import Agent, ApiKey, Membership, Workspace
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.smoke
def test_seed_demo_json_is_idempotent_and_its_key_works():
    first = orjson.loads(run("seed_demo", "--json"))
    assert set(first) == {"workspace_id", "agent_id", "owner_email", "owner_password", "api_key"}
    second = orjson.loads(run("seed_demo", "--json"))
    assert second["workspace_id"] == first["workspace_id"]
    assert second["agent_id"] == first["agent_id"]
    assert Workspace.objects.count() == 1
    assert Agent.objects.count() == 1
    assert Membership.objects.get().role == "owner"
    for raw in (first["api_key"], second["api_key"]):
        body = ApiClient(raw).get("/v1/connection").json()
        assert body["agent"]["id"] == first["agent_id"]
        assert set(body["scopes"]) == set(ALL_SCOPES)
        assert body["is_owner"] is True


def test_create_api_key_json(agent, owner):
    out = orjson.loads(
        run(
            "create_api_key",
            "--agent",
            agent.pk,
            "--scopes",
            "runs:read,knowledge:write",
            "--name",
            "CI key",
            "--created-by",
            owner.email,
            "--json",
        )
    )
    assert set(out) == {"id", "key", "scopes"}
    assert out["scopes"] == ["knowledge:write", "runs:read"]
    key = ApiKey.objects.get(pk=out["id"])
    assert key.name == "CI key" and key.created_by == owner
    assert ApiClient(out["key"]).get("/v1/connection").status == 200


def test_create_api_key_refuses_unknown_scope_and_agent(agent):
    with pytest.raises(CommandError, match="Unknown permission"):
        run("create_api_key", "--agent", agent.pk, "--scopes", "runs:read,root:all")
    with pytest.raises(CommandError, match="No Agent"):
        run("create_api_key", "--agent", "agt_nope", "--scopes", "runs:read")
    assert ApiKey.objects.count() == 0


def test_revoke_api_key_stops_the_key(agent):
    out = orjson.loads(
        run("create_api_key", "--agent", agent.pk, "--scopes", "runs:read", "--json")
    )
    run("revoke_api_key", out["id"])
    assert ApiClient(out["key"]).get("/v1/connection").status == 401
    with pytest.raises(CommandError, match="already revoked"):
        run("revoke_api_key", out["id"])
    with pytest.raises(CommandError, match="No API key"):
        run("revoke_api_key", "key_missing")
