"""One rule each (issue 24, item 8): a key never locks itself out (archiving its own Agent and
revoking itself are both 409), operations that take no body refuse one like every strict body
refuses an unknown field, and a query parameter given twice is 400 rather than silently one of
its values."""

from __future__ import annotations

import pytest

from apps.api.scopes import ALL_SCOPES
from apps.workspaces.models import Agent, AgentRevision, ApiKey

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(make_api):
    return make_api(list(ALL_SCOPES))


def test_a_key_cannot_revoke_itself_as_it_cannot_archive_its_own_agent(admin, agent):
    revoked = admin.post(f"/v1/api_keys/{admin.key.pk}/revoke")
    assert revoked.status == 409
    assert revoked.json()["name"] == "conflict"
    assert "cannot revoke itself" in revoked.json()["message"]
    assert ApiKey.objects.get(pk=admin.key.pk).revoked_at is None
    assert admin.get("/v1/connection").status == 200
    archived = admin.post(f"/v1/agents/{agent.pk}/archive")
    assert archived.status == 409


def test_another_key_may_revoke_it(admin, make_api):
    other = make_api(["runs:read"])
    assert admin.post(f"/v1/api_keys/{other.key.pk}/revoke").status == 200
    assert other.get("/v1/connection").status == 401


def _operations(agent: Agent) -> list[str]:
    revision = AgentRevision.objects.get(agent=agent, number=1)
    return [
        f"/v1/agents/{agent.pk}/archive",
        f"/v1/agents/{agent.pk}/restore",
        f"/v1/agents/{agent.pk}/revisions/{revision.pk}/restore",
    ]


@pytest.mark.parametrize(
    "body",
    [{"force": True}, {"status": "archived"}, [], [1], "text", 5, None],
    ids=repr,
)
def test_bodyless_operations_refuse_a_body(admin, sibling_agent, body):
    for path in _operations(sibling_agent):
        answer = admin.request("POST", path, data=_json(body), content_type="application/json")
        assert answer.status == 400, (path, answer.body)
        assert answer.json()["name"] == "bad_request"
    sibling_agent.refresh_from_db()
    assert sibling_agent.status == "active"
    assert sibling_agent.revision == 1


def _json(value) -> bytes:
    import orjson

    return orjson.dumps(value)


def test_bodyless_operations_take_no_body_or_an_empty_object(admin, sibling_agent):
    archive, restore, revision_restore = _operations(sibling_agent)
    assert admin.post(archive, json={}).status == 200
    assert admin.post(restore).status == 200
    assert admin.post(revision_restore, json={}).status == 200


@pytest.mark.parametrize(
    "query",
    [
        "limit=1&limit=2",
        "status=completed&status=failed",
        "after=a&after=b",
        "user_id=u1&user_id=u2",
    ],
)
def test_a_repeated_query_parameter_is_bad_request(admin, query):
    for path in ("/v1/runs", "/v1/conversations"):
        answer = admin.get(f"{path}?{query}")
        assert answer.status == 400, (path, query, answer.body)
        body = answer.json()
        assert body["name"] == "bad_request"
        assert query.split("=")[0] in body["message"]
