"""Hostile input on the OAuth endpoints and `/mcp`, like /v1's suite (tests/api/
test_hostile_bodies.py): every field x deep nesting, every JSON type, sizes, NUL and lone
surrogates, unknown fields; every grant type x hostile parameters on the token endpoint; the
authorization and revocation endpoints; JSON-RPC bodies and every tool argument on `/mcp`; and
concurrency on the token endpoint. Every answer is below 500 and says what was wrong in the
protocol's own error format; nothing is registered from a refused body. The two matrices that
cost a request each (tool arguments, consent fields) send a share of their values in
`make test-fast` (tests/examples.py), all of them in `make test`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlencode, urlsplit

import orjson
import pytest
from django.test import Client
from oauth2_provider.models import Application

from tests.api.test_hostile_bodies import DEEP_VALUES, LARGE_BODIES, OTHER_VALUES
from tests.examples import share
from tests.mcp_server.conftest import (
    authorize_query,
    client_metadata,
    code_exchange,
    consent_form,
    live_token_client,
    mcp_post,
    obtain_grant,
    pkce_pair,
    register,
    register_client,
)

pytestmark = pytest.mark.django_db

VALUES = {**DEEP_VALUES, **OTHER_VALUES}
REGISTRATION_FIELDS = [
    "client_name",
    "redirect_uris",
    "grant_types",
    "response_types",
    "token_endpoint_auth_method",
    "scope",
    "client_uri",
    "an_unknown_field",
]
HOSTILE_TEXT = {
    "empty": "",
    "NUL": "a\x00b",
    "64 KiB": "x" * 64 * 1024,
    "non-ASCII": "tökén✓",
    "spaces": "a b  c",
    "newline": "a\r\nInjected: 1",
    "percent": "%00%ff%",
}
GRANT_TYPES = [
    "authorization_code",
    "refresh_token",
    "client_credentials",
    "password",
    "implicit",
    "urn:ietf:params:oauth:grant-type:device_code",
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
    "urn:ietf:params:oauth:grant-type:token-exchange",
    "",
    "a\x00b",
    "x" * 10_000,
]
TOKEN_PARAMETERS = [
    "code",
    "refresh_token",
    "client_id",
    "redirect_uri",
    "code_verifier",
    "scope",
    "resource",
    "client_secret",
]


def _assert_oauth_error(answer, *, allowed=(400, 401)) -> None:
    assert answer.status_code < 500, answer.content[:300]
    assert answer.status_code in allowed, (answer.status_code, answer.content[:300])
    assert "error" in orjson.loads(answer.content)


def _valid_metadata() -> dict:
    return client_metadata(client_name="Hostile")


# --- registration --------------------------------------------------------------------------


@pytest.mark.parametrize("value", list(VALUES), ids=str)
@pytest.mark.parametrize("field", REGISTRATION_FIELDS)
def test_every_registration_field_with_every_hostile_value(field, value):
    metadata = {name: item for name, item in _valid_metadata().items() if name != field}
    body = orjson.dumps(metadata)[:-1] + f',"{field}":'.encode() + VALUES[value] + b"}"
    answer = register(body)
    if answer.status_code == 201:
        # Only a field we ignore, or a value that is valid for it, registers.
        assert field in {"scope", "client_uri", "an_unknown_field", "client_name"}, value
        return
    _assert_oauth_error(answer, allowed=(400,))
    assert not Application.objects.exists()


@pytest.mark.parametrize("value", list(VALUES), ids=str)
def test_every_hostile_redirect_uri_item(value):
    metadata = _valid_metadata()
    del metadata["redirect_uris"]
    body = orjson.dumps(metadata)[:-1] + b',"redirect_uris":[' + VALUES[value] + b"]}"
    _assert_oauth_error(register(body), allowed=(400,))
    assert not Application.objects.exists()


@pytest.mark.parametrize("text", list(HOSTILE_TEXT), ids=str)
def test_hostile_strings_in_redirect_uris_and_names(text):
    value = HOSTILE_TEXT[text]
    for field, item in (("redirect_uris", [f"https://c.example/{value}"]), ("client_name", value)):
        answer = register(orjson.dumps({**_valid_metadata(), field: item}))
        assert answer.status_code in (201, 400), answer.content[:300]


@pytest.mark.parametrize(
    "body",
    [*LARGE_BODIES, b"", b"not json", b"null", b"[]", b'"text"', b"\xff\xfe"],
    ids=lambda body: f"{len(body)} bytes",
)
def test_whole_hostile_registration_bodies(body):
    _assert_oauth_error(register(body), allowed=(400,))
    assert not Application.objects.exists()


# --- token, authorization and revocation endpoints ----------------------------------------


@pytest.mark.parametrize("grant_type", GRANT_TYPES, ids=lambda text: text[:40] or "empty")
def test_every_grant_type_with_hostile_parameters(grant_type):
    client_id = register_client()
    for parameter in TOKEN_PARAMETERS:
        for name, text in HOSTILE_TEXT.items():
            body = {"grant_type": grant_type, "client_id": client_id, parameter: text}
            answer = Client().post("/oauth/token/", body)
            assert answer.status_code < 500, (grant_type[:40], parameter, name, answer.content)
            assert "error" in answer.json(), (grant_type[:40], parameter, name)
            assert "access_token" not in answer.json()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"grant_type": "authorization_code"}', "application/json"),
        (b"grant_type=refresh_token&refresh_token=a&refresh_token=b", None),
        (b"grant_type=authorization_code&code=%00", None),
        (b"\xff\xfe\x00", "application/x-www-form-urlencoded"),
        (b"x" * 1024 * 1024, "application/x-www-form-urlencoded"),
    ],
    ids=["json", "repeated", "NUL escape", "bytes", "1 MiB"],
)
def test_hostile_token_bodies(body, content_type):
    answer = Client().post(
        "/oauth/token/",
        data=body,
        content_type=content_type or "application/x-www-form-urlencoded",
    )
    assert answer.status_code < 500, answer.content[:300]


@pytest.mark.parametrize(
    "parameter",
    [
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
        "prompt",
    ],
)
def test_the_authorization_endpoint_with_hostile_parameters(owner, parameter):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(owner)
    base = parse_qs(authorize_query(client_id, challenge, "runs:read"))
    for name, text in HOSTILE_TEXT.items():
        query = {key: values[0] for key, values in base.items()}
        query[parameter] = text
        answer = browser.get(f"/oauth/authorize/?{urlencode(query)}")
        assert answer.status_code < 500, (parameter, name, answer.content[:300])
        if answer.status_code == 302:
            location = urlsplit(answer["Location"])
            if location.netloc == "localhost:53682":
                assert "iss" in parse_qs(location.query), answer["Location"]


def test_the_consent_post_with_hostile_hidden_fields(owner, agent):
    client_id = register_client()
    _verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(owner)
    fields = consent_form(browser, authorize_query(client_id, challenge, "runs:read"))
    for field in [*fields, "agent_id", "granted_scopes"]:
        for name, text in share(HOSTILE_TEXT.items()):
            form = {**fields, "agent_id": agent.pk, "granted_scopes": ["runs:read"], "allow": "1"}
            form[field] = text
            answer = browser.post("/oauth/authorize/", form)
            assert answer.status_code < 500, (field, name, answer.content[:300])


def test_the_revocation_endpoint_with_hostile_parameters():
    client_id = register_client()
    for parameter in ("token", "token_type_hint", "client_id"):
        for name, text in HOSTILE_TEXT.items():
            body = {"token": "ort_x", "client_id": client_id, parameter: text}
            answer = Client().post("/oauth/revoke_token/", body)
            assert answer.status_code < 500, (parameter, name, answer.content[:300])


# --- /mcp ----------------------------------------------------------------------------------


def _mcp_raw(token: str, body: bytes, **headers):
    from tests.mcp_server.conftest import off_the_event_loop

    extra = {
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        **headers,
    }
    return off_the_event_loop(
        lambda: Client().post("/mcp", data=body, content_type="application/json", **extra)
    )


@pytest.fixture
def grant(owner, agent):
    return obtain_grant(owner, agent, ["runs:read", "knowledge:read", "conversations:read"])


def test_whole_hostile_jsonrpc_bodies(grant):
    bodies = [*LARGE_BODIES, *VALUES.values(), b"", b"not json", b"\xff\xfe"]
    for body in bodies:
        answer = _mcp_raw(grant.access_token, body)
        assert answer.status_code < 500, (body[:40], answer.content[:300])


@pytest.mark.parametrize("field", ["jsonrpc", "id", "method", "params"])
def test_every_jsonrpc_field_with_every_hostile_value(grant, field):
    base = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for name, value in VALUES.items():
        rest = orjson.dumps({key: item for key, item in base.items() if key != field})
        body = rest[:-1] + f',"{field}":'.encode() + value + b"}"
        answer = _mcp_raw(grant.access_token, body)
        assert answer.status_code < 500, (field, name, answer.content[:300])


TOOL_ARGUMENTS = {
    "search_knowledge": ["query", "mode", "limit", "run_id"],
    "list_documents": ["limit", "after"],
    "read_document": ["document_id"],
    "list_conversations": ["limit", "after", "user_id", "status"],
    "read_conversation": ["conversation_id", "limit"],
    "list_runs": ["limit", "after", "conversation_id", "status", "model_id", "error_code"],
    "read_run": ["run_id"],
    "usage": ["from_date", "to_date"],
}
TOOL_VALUES = {
    name: VALUES[name]
    for name in ("null", "true", "negative", "integer past 64 bits", "NUL string", "object")
} | {
    "deep": DEEP_VALUES["object nested past Python recursion"],
    "lone surrogate": VALUES["lone surrogate"],
    "long string": b'"' + b"x" * 4096 + b'"',
}


@pytest.mark.parametrize("tool", list(TOOL_ARGUMENTS))
def test_every_tool_argument_with_hostile_values(grant, tool):
    for argument in TOOL_ARGUMENTS[tool]:
        for name, value in share(TOOL_VALUES.items()):
            body = (
                b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"'
                + tool.encode()
                + b'","arguments":{"'
                + argument.encode()
                + b'":'
                + value
                + b"}}}"
            )
            answer = _mcp_raw(grant.access_token, body)
            assert answer.status_code < 500, (tool, argument, name, answer.content[:300])
            if answer.status_code == 200:
                reply = orjson.loads(answer.content)
                assert "error" in reply or "result" in reply


def test_hostile_mcp_headers(grant):
    for header in ("HTTP_MCP_PROTOCOL_VERSION", "HTTP_MCP_SESSION_ID", "HTTP_ACCEPT"):
        for name, text in HOSTILE_TEXT.items():
            if "\n" in text or "\x00" in text:
                continue  # not a header a client can send
            # A WSGI server hands header bytes over decoded as latin-1 (PEP 3333).
            text = text.encode().decode("latin-1")
            body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
            answer = _mcp_raw(grant.access_token, body, **{header: text})
            assert answer.status_code < 500, (header, name, answer.content[:300])


# --- concurrency on the token endpoint -----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_exchanges_of_one_code_issue_at_most_one_token(live_server, owner, agent):
    with live_token_client(live_server) as http:
        for _round in range(3):
            body = code_exchange(owner, agent, ["runs:read"])

            def exchange(_index, body=body):
                return http.post("/oauth/token/", data=body)

            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(exchange, range(4)))
            statuses = [answer.status_code for answer in answers]
            assert 500 not in statuses, [answer.text for answer in answers]
            assert statuses.count(200) <= 1, statuses
            for answer in answers:
                if answer.status_code != 200:
                    assert answer.json()["error"] == "invalid_grant"


def test_a_body_past_the_mcp_limit_is_413_not_a_cut_short_parse_error(owner, agent):
    """Before: the body was cut at 1 MiB and handed on, to fail as malformed JSON."""
    grant = obtain_grant(owner, agent, ["runs:read"])
    answer = mcp_post(grant.access_token, "tools/list", {"padding": "a" * (1024 * 1024)})
    assert answer.status_code == 413
    assert answer.json()["error"] == {
        "code": -32600,
        "message": "The request body is larger than 1048576 bytes.",
    }
    assert mcp_post(grant.access_token, "tools/list").status_code == 200
