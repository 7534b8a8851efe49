"""The webhook operations of contract 4.3 and their extensions: exact shapes, strict bodies,
owner checks, workspace-wide Agent paths and keyset pages."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.webhooks.models import Webhook
from tests.webhooks.conftest import received
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db

WEBHOOK_KEYS = {"object", "agent_id", "enabled", "events", "url", "paused_at", "updated_at"}
DELIVERY_KEYS = {
    "object",
    "id",
    "agent_id",
    "run_id",
    "event_type",
    "is_test",
    "status",
    "attempts",
    "retry_count",
    "response_status",
    "error_message",
    "next_attempt_at",
    "attempt_history",
    "created_at",
    "updated_at",
}
ATTEMPT_KEYS = {
    "attempt",
    "retry",
    "status",
    "response_status",
    "error_message",
    "started_at",
    "finished_at",
}


def base(agent) -> str:
    return f"/v1/agents/{agent.pk}/webhook"


@pytest.mark.smoke
def test_unconfigured_webhook_is_the_disabled_default(api, agent):
    response = api.get(base(agent))

    assert response.status == 200
    body = response.json()
    assert set(body) == WEBHOOK_KEYS
    assert body["object"] == "webhook"
    assert body["agent_id"] == agent.pk
    assert (body["enabled"], body["events"], body["url"], body["paused_at"]) == (
        False,
        [],
        None,
        None,
    )
    assert body["updated_at"].endswith("Z")


def test_patch_configures_and_never_returns_the_secret(api, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    response = api.patch(
        base(agent),
        json={
            "url": "http://127.0.0.1:9/hook",
            "events": ["run.failed", "run.completed", "run.failed"],
            "enabled": True,
        },
    )

    assert response.status == 200, response.body
    body = response.json()
    assert set(body) == WEBHOOK_KEYS
    assert body["events"] == ["run.completed", "run.failed"]
    assert body["url"] == "http://127.0.0.1:9/hook"
    assert body["enabled"] is True
    assert b"whsec_" not in response.body
    assert b"whsec_" not in api.get(base(agent)).body


@pytest.mark.smoke
def test_patch_refuses_a_loopback_url_by_default(api, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = False

    response = api.patch(base(agent), json={"url": "http://127.0.0.1:8000/hook"})

    assert response.status == 400
    assert response.json()["name"] == "bad_request"
    assert response.json()["message"].startswith("url:")
    assert not Webhook.objects.filter(agent=agent, url__isnull=False).exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"enabled": "true"},
        {"paused": 1},
        {"events": ["run.started"]},
        {"events": "run.completed"},
        {"url": 5},
        {"secret": "whsec_x"},
        {"enabled": True},  # no URL yet
        {"url": "ftp://example.com/hook"},
        {"events": []},  # a webhook with no event would say Active and send nothing
        [],
    ],
)
def test_patch_refuses_invalid_bodies(api, agent, body):
    response = api.patch(base(agent), json=body)

    assert response.status == 400, body
    assert set(response.json()) == {"name", "message"}


def test_patch_pauses_and_resumes(api, agent):
    webhook_factory(agent=agent)

    paused = api.patch(base(agent), json={"paused": True}).json()
    assert paused["paused_at"] is not None
    resumed = api.patch(base(agent), json={"paused": False}).json()
    assert resumed["paused_at"] is None


def test_any_active_agent_of_the_workspace_can_be_targeted(api, sibling_agent):
    webhook_factory(agent=sibling_agent)

    response = api.get(base(sibling_agent))

    assert response.status == 200
    assert response.json()["agent_id"] == sibling_agent.pk
    assert response.json()["enabled"] is True


@pytest.mark.parametrize(
    "path",
    [
        "/webhook",
        "/webhook/deliveries",
        "/webhook/deliveries/dlv_x/retry",
        "/webhook/test",
        "/webhook/secret",
    ],
)
def test_another_workspaces_agent_is_not_found(api, other_agent, path):
    method = "post" if path.endswith(("retry", "test", "secret")) else "get"

    response = getattr(api, method)(f"/v1/agents/{other_agent.pk}{path}")

    assert response.status == 404
    assert response.json()["name"] == "not_found"


def test_an_archived_agent_is_not_found(api, sibling_agent):
    sibling_agent.status = "archived"
    sibling_agent.save()

    assert api.get(base(sibling_agent)).status == 404


def test_webhook_paths_exist_only_in_the_agent_scoped_form(api):
    assert api.get("/v1/webhook").status == 404
    assert api.get("/v1/webhook/deliveries").status == 404


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("get", "", "webhooks:read"),
        ("patch", "", "webhooks:write"),
        ("get", "/deliveries", "webhooks:read"),
        ("post", "/deliveries/dlv_x/retry", "webhooks:write"),
        ("post", "/test", "webhooks:write"),
        ("post", "/secret", "webhooks:write"),
    ],
)
def test_key_created_by_a_member_is_insufficient_scope(
    make_api, member, agent, method, path, scope
):
    member_api = make_api(scopes=["webhooks:read", "webhooks:write"], created_by=member)
    kwargs = {"json": {"enabled": False}} if method == "patch" else {}

    response = getattr(member_api, method)(base(agent) + path, **kwargs)

    assert response.status == 403
    assert response.json()["name"] == "insufficient_scope"
    assert f'scope="{scope}"' in response.headers["WWW-Authenticate"]
    assert "owner" in response.json()["message"]


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [
        ("get", "", "webhooks:read"),
        ("patch", "", "webhooks:write"),
        ("get", "/deliveries", "webhooks:read"),
        ("post", "/deliveries/dlv_x/retry", "webhooks:write"),
        ("post", "/test", "webhooks:write"),
        ("post", "/secret", "webhooks:write"),
    ],
)
def test_key_without_the_webhook_scope_is_insufficient_scope(make_api, agent, method, path, scope):
    other = "webhooks:write" if scope == "webhooks:read" else "webhooks:read"
    narrow = make_api(scopes=["runs:read", other])
    kwargs = {"json": {"enabled": False}} if method == "patch" else {}

    response = getattr(narrow, method)(base(agent) + path, **kwargs)

    assert response.status == 403
    assert f'scope="{scope}"' in response.headers["WWW-Authenticate"]


def test_deliveries_are_listed_newest_first_with_exact_shapes(api, agent):
    webhook = webhook_factory(agent=agent)
    now = timezone.now()
    old = delivery_factory(webhook=webhook, created_at=now - timedelta(minutes=2))
    new = delivery_factory(webhook=webhook, created_at=now - timedelta(minutes=1))

    response = api.get(base(agent) + "/deliveries")

    assert response.status == 200
    body = response.json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    assert [d["id"] for d in body["data"]] == [new.pk, old.pk]
    assert set(body["data"][0]) == DELIVERY_KEYS
    assert body["data"][0]["object"] == "webhook_delivery"
    assert body["data"][0]["attempt_history"] == []


def test_deliveries_page_with_cursors_and_refuse_bad_limits(api, agent):
    webhook = webhook_factory(agent=agent)
    now = timezone.now()
    ids = [
        delivery_factory(webhook=webhook, created_at=now - timedelta(seconds=i)).pk
        for i in range(5)
    ]
    seen, after = [], None
    while True:
        params = {"limit": 2, **({"after": after} if after else {})}
        page = api.get(base(agent) + "/deliveries", params=params).json()
        seen += [d["id"] for d in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        after = page["next_cursor"]
    assert seen == ids
    for limit in (0, 101, "x"):
        assert api.get(base(agent) + "/deliveries", params={"limit": limit}).status == 400


def test_deliveries_filter_by_status_and_event(api, agent):
    webhook = webhook_factory(agent=agent)
    failed = delivery_factory(webhook=webhook, status="failed", event_type="run.failed")
    delivery_factory(webhook=webhook, status="succeeded")

    by_status = api.get(base(agent) + "/deliveries", params={"status": "failed"}).json()
    by_event = api.get(base(agent) + "/deliveries", params={"event_type": "run.failed"}).json()

    assert [d["id"] for d in by_status["data"]] == [failed.pk]
    assert [d["id"] for d in by_event["data"]] == [failed.pk]
    assert api.get(base(agent) + "/deliveries", params={"status": "nope"}).status == 400


def test_deliveries_of_another_agent_are_not_listed_nor_retried(api, agent, sibling_agent):
    theirs = delivery_factory(webhook=webhook_factory(agent=sibling_agent))
    webhook_factory(agent=agent)

    assert api.get(base(agent) + "/deliveries").json()["data"] == []
    response = api.post(base(agent) + f"/deliveries/{theirs.pk}/retry")
    assert response.status == 404
    assert api.get(base(sibling_agent) + "/deliveries").json()["data"][0]["id"] == theirs.pk


def test_retry_sends_now_and_returns_the_delivery_with_the_new_attempt(api, agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    delivery = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)
    receiver.expect_request("/hook").respond_with_data("ok", status=202)

    response = api.post(base(agent) + f"/deliveries/{delivery.pk}/retry")

    assert response.status == 200
    body = response.json()
    assert set(body) == DELIVERY_KEYS
    assert (body["status"], body["attempts"], body["response_status"]) == ("succeeded", 1, 202)
    [attempt] = body["attempt_history"]
    assert set(attempt) == ATTEMPT_KEYS
    assert (attempt["attempt"], attempt["status"], attempt["response_status"]) == (
        1,
        "succeeded",
        202,
    )
    assert len(received(receiver)) == 1


def test_retry_while_sending_is_a_conflict(api, agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    delivery = delivery_factory(webhook=webhook, status="sending", claim_token="held")

    response = api.post(base(agent) + f"/deliveries/{delivery.pk}/retry")

    assert response.status == 409
    assert response.json()["name"] == "conflict"
    assert received(receiver) == []


def test_retry_of_an_unknown_delivery_is_not_found(api, agent):
    webhook_factory(agent=agent)
    assert api.post(base(agent) + "/deliveries/dlv_missing/retry").status == 404


def test_delivery_can_be_retrieved_by_id(api, agent):
    delivery = delivery_factory(webhook=webhook_factory(agent=agent))

    response = api.get(base(agent) + f"/deliveries/{delivery.pk}")

    assert response.status == 200
    assert response.json()["id"] == delivery.pk


def test_test_send_returns_a_test_delivery(api, agent, receiver):
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("ok")

    response = api.post(base(agent) + "/test", json={"event_type": "run.aborted"})

    assert response.status == 200
    body = response.json()
    assert set(body) == DELIVERY_KEYS
    assert (body["is_test"], body["event_type"], body["status"]) == (
        True,
        "run.aborted",
        "succeeded",
    )
    assert len(body["attempt_history"]) == 1


def test_test_send_without_body_uses_the_first_subscribed_event(api, agent, receiver):
    webhook_factory(agent=agent, url=receiver.url_for("/hook"), events=["run.failed"])
    receiver.expect_request("/hook").respond_with_data("ok")

    response = api.post(base(agent) + "/test", data=b"", content_type="application/json")

    assert response.status == 200
    assert response.json()["event_type"] == "run.failed"


def test_test_send_without_url_is_a_conflict(api, agent):
    assert api.post(base(agent) + "/test", json={}).status == 409
    assert api.post(base(agent) + "/test", json={"event_type": "run.x"}).status == 400


def test_rotate_returns_a_new_secret_once(api, agent):
    first = api.post(base(agent) + "/secret")
    second = api.post(base(agent) + "/secret")

    assert first.status == second.status == 200
    assert set(first.json()) == {"object", "agent_id", "secret"}
    assert first.json()["secret"].startswith("whsec_")
    assert first.json()["secret"] != second.json()["secret"]
    assert Webhook.objects.get(agent=agent).secret == second.json()["secret"]
