"""POST /v1/auth_tokens and the browser token it mints: what the token reads (/v1/me), what it
may not, its expiry, its revocation with the minting key, and CORS for the Agent's origins."""

from datetime import timedelta

import pytest
import schemathesis
from django.test import Client
from django.utils import timezone

from apps.activity.models import EndUser
from apps.activity.services import auth_token_create
from apps.workspaces.browser_tokens import browser_token_verify
from apps.workspaces.services import api_key_revoke
from tests.activity.factories import conversation_factory, end_user_factory, message_factory
from tests.api.fuzzing import FUZZ_SETTINGS, call_and_validate, fuzz_schema_from
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

ALLOWED = "https://app.example.com"
FOREIGN = "https://evil.example.net"


@pytest.fixture
def minter(make_api, agent):
    agent.allowed_origins = [ALLOWED]
    agent.save(update_fields=["allowed_origins"])
    return make_api(["auth_tokens:create"])


def mint(minter, external_id: str = "cust-1", **body) -> dict:
    response = minter.post("/v1/auth_tokens", json={"external_id": external_id, **body})
    assert response.status == 201, response.body
    return response.json()


def assert_error(response, status: int, name: str) -> dict:
    assert response.status == status, response.body
    body = response.json()
    assert set(body) == {"name", "message"}
    assert body["name"] == name
    return body


# --- minting ---------------------------------------------------------------------------------


def test_mint_returns_exact_fields_and_upserts_an_identified_user(minter, agent, time_machine):
    time_machine.move_to("2026-03-01T12:00:00Z", tick=False)
    body = mint(minter, display_name="Ada", email="ada@example.com")
    assert set(body) == {"object", "token", "expires_at", "user_id", "agent_id"}
    assert body["object"] == "auth_token"
    assert body["token"].startswith("abt_")
    assert body["expires_at"] == "2026-03-01T13:00:00.000Z"
    assert body["agent_id"] == agent.pk
    user = EndUser.objects.get(id=body["user_id"])
    assert (user.agent_id, user.external_id, user.identity_type) == (agent.pk, "cust-1", "user")
    assert (user.display_name, user.email) == ("Ada", "ada@example.com")
    again = mint(minter, expires_in=86400)
    assert again["user_id"] == body["user_id"]
    assert again["expires_at"] == "2026-03-02T12:00:00.000Z"
    user.refresh_from_db()
    assert user.display_name == "Ada"  # absent fields keep their stored values


def test_mint_accepts_the_service_agent_key_header(agent, minter):
    client = ApiClient(None)
    response = client.post(
        "/v1/auth_tokens",
        json={"external_id": "x"},
        headers={"X-Service-Agent-Key": minter.raw_key},
    )
    assert response.status == 201
    both = client.post(
        "/v1/auth_tokens",
        json={"external_id": "x"},
        headers={"X-Service-Agent-Key": minter.raw_key, "Authorization": "Bearer ack_other"},
    )
    assert_error(both, 400, "bad_request")
    bad = client.post(
        "/v1/auth_tokens", json={"external_id": "x"}, headers={"X-Service-Agent-Key": "ack_nope"}
    )
    assert_error(bad, 401, "unauthorized")
    assert bad.headers["WWW-Authenticate"] == 'Bearer realm="agent-console"'


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"external_id": ""},
        {"external_id": 42},
        {"external_id": "x" * 256},
        {"external_id": "a", "email": "not-an-email"},
        {"external_id": "a", "expires_in": 59},
        {"external_id": "a", "expires_in": 86401},
        {"external_id": "a", "expires_in": "3600"},
        {"external_id": "a", "expires_in": True},
        {"external_id": "a", "identity_type": "user"},
    ],
)
def test_bad_mint_bodies_are_bad_request_and_record_nobody(minter, body):
    assert_error(minter.post("/v1/auth_tokens", json=body), 400, "bad_request")
    assert not EndUser.objects.exists()


def test_mint_needs_auth_tokens_create(make_api):
    client = make_api(["conversations:read"])
    response = client.post("/v1/auth_tokens", json={"external_id": "a"})
    assert_error(response, 403, "insufficient_scope")
    assert 'scope="auth_tokens:create"' in response.headers["WWW-Authenticate"]


def test_mint_on_another_workspaces_agent_is_not_found(minter, other_agent):
    response = minter.post(f"/v1/agents/{other_agent.pk}/auth_tokens", json={"external_id": "a"})
    assert_error(response, 404, "not_found")


def test_mint_sends_no_cors_headers(minter):
    response = minter.post(
        "/v1/auth_tokens", json={"external_id": "a"}, headers={"Origin": ALLOWED}
    )
    assert response.status == 201
    assert "Access-Control-Allow-Origin" not in response.headers
    preflight = ApiClient(None).request(
        "OPTIONS",
        "/v1/auth_tokens",
        headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"},
    )
    assert "Access-Control-Allow-Origin" not in preflight.headers


def test_token_never_outlives_the_minting_keys_expiry(minter):
    soon = timezone.now() + timedelta(minutes=10)
    type(minter.key).objects.filter(pk=minter.key.pk).update(expires_at=soon)
    body = mint(minter, expires_in=3600)
    token, _, _ = browser_token_verify(raw_token=body["token"])
    assert token.expires_at <= soon


# --- reading with the token ------------------------------------------------------------------


@pytest.fixture
def conversations(agent, other_agent):
    """The token user's two conversations, another user's one, and another Agent's one."""
    me = end_user_factory(agent=agent, external_id="cust-1")
    someone = end_user_factory(agent=agent, external_id="cust-2")
    now = timezone.now()
    older = conversation_factory(agent=agent, user=me, updated_at=now - timedelta(hours=1))
    newer = conversation_factory(agent=agent, user=me, updated_at=now)
    theirs = conversation_factory(agent=agent, user=someone)
    foreign = conversation_factory(
        agent=other_agent, user=end_user_factory(agent=other_agent, external_id="cust-1")
    )
    for text in ("first", "second"):
        message_factory(conversation=newer, parts=[{"type": "text", "text": text}])
    message_factory(conversation=theirs)
    return {"older": older, "newer": newer, "theirs": theirs, "foreign": foreign}


def test_me_lists_only_the_users_own_conversations_newest_first(minter, conversations):
    browser = ApiClient(mint(minter)["token"])
    body = browser.get("/v1/me/conversations").json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    assert [c["id"] for c in body["data"]] == [conversations["newer"].id, conversations["older"].id]
    assert set(body["data"][0]) == {
        "object",
        "id",
        "title",
        "status",
        "source",
        "user_id",
        "created_at",
        "updated_at",
    }
    first = browser.get("/v1/me/conversations", params={"limit": "1"}).json()
    assert first["has_more"] is True
    rest = browser.get(
        "/v1/me/conversations", params={"limit": "1", "after": first["next_cursor"]}
    ).json()
    assert [c["id"] for c in rest["data"]] == [conversations["older"].id]
    assert rest["has_more"] is False and rest["next_cursor"] is None
    assert_error(browser.get("/v1/me/conversations", params={"limit": "101"}), 400, "bad_request")


def test_me_messages_oldest_first_and_other_users_conversation_is_not_found(minter, conversations):
    browser = ApiClient(mint(minter)["token"])
    response = browser.get(f"/v1/me/conversations/{conversations['newer'].id}/messages")
    assert response.status == 200
    texts = [m["parts"][0]["text"] for m in response.json()["data"]]
    assert texts == ["first", "second"]
    for other in ("theirs", "foreign"):
        path = f"/v1/me/conversations/{conversations[other].id}/messages"
        assert_error(browser.get(path), 404, "not_found")
    assert_error(browser.get("/v1/me/conversations/conv_nope/messages"), 404, "not_found")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/conversations",
        "/v1/users",
        "/v1/runs",
        "/v1/knowledge",
        "/v1/api_keys",
        "/v1/conversations/{conv}/messages",
    ],
)
def test_token_is_insufficient_scope_on_every_other_operation(minter, conversations, path):
    browser = ApiClient(mint(minter)["token"])
    response = browser.get(path.replace("{conv}", conversations["newer"].id))
    assert_error(response, 403, "insufficient_scope")
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]


def test_token_cannot_mint_record_or_write(minter, agent):
    browser = ApiClient(mint(minter)["token"])
    for path, body in (("/v1/auth_tokens", {"external_id": "b"}), ("/v1/ingest", [])):
        assert_error(browser.post(path, json=body), 403, "insufficient_scope")
    response = browser.request(
        "GET", "/v1/auth_tokens", headers={"X-Service-Agent-Key": browser.raw_key}
    )
    assert response.status in (400, 403)


def test_api_key_on_me_is_insufficient_scope(minter, make_api):
    reader = make_api(["conversations:read"])
    response = reader.get("/v1/me/conversations")
    body = assert_error(response, 403, "insufficient_scope")
    assert "browser token" in body["message"]
    assert 'scope="conversations:read"' in response.headers["WWW-Authenticate"]


def test_connection_tells_a_browser_token(minter, agent):
    minted = mint(minter)
    body = ApiClient(minted["token"]).get("/v1/connection").json()
    assert body["credential"]["kind"] == "browser_token"
    assert body["credential"]["user_id"] == minted["user_id"]
    assert body["credential"]["expires_at"] == minted["expires_at"]
    assert body["scopes"] == ["conversations:read", "scores:write"]  # its feedback: docs/scores.md
    assert body["is_owner"] is False
    assert body["agent"]["id"] == agent.pk
    assert minted["token"] not in str(body)


# --- validity ----------------------------------------------------------------------------------


def test_expired_token_is_unauthorized(minter, time_machine):
    time_machine.move_to("2026-03-01T12:00:00Z", tick=False)
    browser = ApiClient(mint(minter, expires_in=60)["token"])
    assert browser.get("/v1/me/conversations").status == 200
    time_machine.move_to("2026-03-01T12:01:00Z", tick=False)
    body = assert_error(browser.get("/v1/me/conversations"), 401, "unauthorized")
    assert "expired at 2026-03-01T12:01:00.000Z" in body["message"]


def test_tampered_or_foreign_tokens_are_unauthorized(minter, settings):
    token = mint(minter)["token"]
    payload, signature = token.rsplit(":", 1)
    for forged in (
        payload + ":" + signature[::-1],
        payload.replace("abt_", "abt_x") + ":" + signature,
        "abt_",
        "abt_garbage",
    ):
        response = ApiClient(forged).get("/v1/me/conversations")
        assert_error(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="agent-console"'
    settings.SECRET_KEY = "another-deployment-" + "x" * 40
    assert_error(ApiClient(token).get("/v1/me/conversations"), 401, "unauthorized")


def test_revoking_the_minting_key_invalidates_its_tokens(minter, agent):
    browser = ApiClient(mint(minter)["token"])
    assert browser.get("/v1/me/conversations").status == 200
    api_key_revoke(agent=agent, key_id=minter.key.pk, by_user=None)
    body = assert_error(browser.get("/v1/me/conversations"), 401, "unauthorized")
    assert "revoked" in body["message"]


def test_archiving_the_agent_invalidates_its_tokens(minter, agent):
    browser = ApiClient(mint(minter)["token"])
    agent.status = "archived"
    agent.save(update_fields=["status"])
    assert_error(browser.get("/v1/me/conversations"), 401, "unauthorized")


def test_verifying_a_token_reads_no_database_once_its_key_is_cached(
    minter, settings, django_assert_num_queries
):
    if not settings.REDIS_URL:
        pytest.skip("the shared key cache is Redis")
    token = mint(minter)["token"]
    browser_token_verify(raw_token=token)  # warms the key cache if minting did not
    with django_assert_num_queries(0):
        claims, key, _ = browser_token_verify(raw_token=token)
    assert key.pk == minter.key.pk


def test_each_token_has_its_own_rate_limit_window(minter, settings):
    settings.API_RATE_LIMIT = "2/minute"
    first = ApiClient(mint(minter, "a")["token"])
    second = ApiClient(mint(minter, "b")["token"])
    assert [first.get("/v1/me/conversations").status for _ in range(3)] == [200, 200, 429]
    assert second.get("/v1/me/conversations").status == 200


# --- CORS --------------------------------------------------------------------------------------


def test_allowed_origin_reads_and_foreign_origin_gets_no_cors_header(minter, conversations):
    browser = ApiClient(mint(minter)["token"])
    allowed = browser.get("/v1/me/conversations", headers={"Origin": ALLOWED})
    assert allowed.status == 200
    assert allowed.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "Origin" in allowed.headers["Vary"]
    foreign = browser.get("/v1/me/conversations", headers={"Origin": FOREIGN})
    assert "Access-Control-Allow-Origin" not in foreign.headers
    assert "Origin" in foreign.headers["Vary"]


def test_preflight_on_me_is_answered_without_a_credential(agent):
    response = Client().options(
        "/v1/me/conversations",
        headers={
            "Origin": ALLOWED,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == ALLOWED
    assert response["Access-Control-Allow-Methods"] == "GET"
    assert response["Access-Control-Allow-Headers"] == "Authorization"


def test_unauthorized_on_me_is_readable_so_the_page_can_fetch_a_new_token(agent):
    response = ApiClient("abt_bad").get("/v1/me/conversations", headers={"Origin": FOREIGN})
    assert response.status == 401
    assert response.headers["Access-Control-Allow-Origin"] == FOREIGN


def test_options_elsewhere_stays_bad_request_without_cors(api):
    response = api.request(
        "OPTIONS",
        "/v1/conversations",
        headers={"Origin": ALLOWED, "Access-Control-Request-Method": "GET"},
    )
    assert_error(response, 400, "bad_request")
    assert "Access-Control-Allow-Origin" not in response.headers
    plain = api.request("OPTIONS", "/v1/me/conversations")
    assert_error(plain, 400, "bad_request")


# --- fuzz /v1/me with a browser token ----------------------------------------------------------
# tests/api/test_openapi.py fuzzes every operation with an API key, which /v1/me refuses (403);
# here the /v1/me operations are fuzzed with the credential they serve.

me_schema = schemathesis.from_pytest_fixture("me_fuzz_schema").include(path_regex=r"^/v1/me/")


@pytest.fixture
def me_fuzz_schema(db):
    from tests.api.test_openapi import fetch_document

    return fuzz_schema_from(fetch_document())


@pytest.fixture
def fuzz_token(fuzz_key, agent):
    end_user = end_user_factory(agent=agent, external_id="fuzz-user")
    conversation = conversation_factory(agent=agent, user=end_user)
    message_factory(conversation=conversation)
    # Minted by the service: a test-client request here would reconnect the connection-closing
    # signals that `fuzz_key` disconnects for the raw WSGI calls.
    minted = auth_token_create(
        key=fuzz_key.key, external_id="fuzz-user", profile={}, lifetime_seconds=3600
    )
    return minted.token


@me_schema.parametrize()
@FUZZ_SETTINGS
def test_fuzz_me_with_a_browser_token(case, fuzz_token):
    call_and_validate(case, bearer=fuzz_token)
