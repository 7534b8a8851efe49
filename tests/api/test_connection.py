import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.smoke]


def test_connection_describes_the_key_without_its_secret(make_api, agent, workspace):
    client = make_api(["runs:read", "users:read"])
    response = client.get("/v1/connection")
    assert response.status == 200
    body = response.json()
    assert set(body) == {"object", "credential", "agent", "workspace", "scopes", "is_owner"}
    assert body["object"] == "connection"
    assert body["credential"]["kind"] == "api_key"
    assert body["credential"]["prefix"] == client.key.prefix
    assert body["agent"] == {"id": agent.pk, "name": agent.name}
    assert body["workspace"] == {"id": workspace.pk, "name": workspace.name}
    assert body["scopes"] == ["runs:read", "users:read"]
    assert body["is_owner"] is True
    secret = client.raw_key.split("_", 1)[1][12:]
    assert secret not in response.body.decode()


def test_connection_needs_no_scope_and_reports_non_owner(make_api, member):
    client = make_api(["knowledge:read"], created_by=member)
    body = client.get("/v1/connection").json()
    assert body["is_owner"] is False


def test_agent_scoped_form_serves_own_agent_and_hides_others(
    api, agent, other_agent, sibling_agent
):
    assert api.get(f"/v1/agents/{agent.pk}/connection").status == 200
    for foreign in (other_agent.pk, sibling_agent.pk, "agt_doesnotexist"):
        response = api.get(f"/v1/agents/{foreign}/connection")
        assert response.status == 404
        assert response.json()["name"] == "not_found"
