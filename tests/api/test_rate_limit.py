"""The per-credential rate limit and its RateLimit headers (IETF draft fields), on real Redis
and on the in-process store of the embedded default, through real requests."""

import logging
import os
import re
import socket
import uuid

import pytest
import redis as redis_lib

from tests.api.test_errors import assert_envelope
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

FIELD = re.compile(r'^"default";r=(\d+);t=(\d+)$')
T0 = "2030-03-01T10:00:00Z"
ORIGIN = "https://app.example.com"


@pytest.fixture(params=["redis", "memory"])
def store(request, settings):
    """Each test runs against both stores the settings can name."""
    if request.param == "redis":
        if not settings.REDIS_URL:
            pytest.skip("needs Redis (REDIS_URL)")
        settings.RATE_LIMIT_STORAGE_URL = settings.REDIS_URL
    else:
        settings.RATE_LIMIT_STORAGE_URL = "memory://"
    return request.param


def counted(response) -> tuple[int, int]:
    """(r, t) of the response's RateLimit field."""
    match = FIELD.match(response.headers["RateLimit"])
    assert match, response.headers["RateLimit"]
    return int(match[1]), int(match[2])


def test_every_answer_carries_the_policy_and_counts_down(make_api, settings, store):
    settings.API_RATE_LIMIT = "5/minute"
    client = make_api(["users:read"])
    seen = []
    for _ in range(3):
        response = client.get("/v1/connection")
        assert response.status == 200
        assert response.headers["RateLimit-Policy"] == '"default";q=5;w=60'
        seen.append(counted(response))
    assert [r for r, _ in seen] == [4, 3, 2]
    assert all(1 <= t <= 60 for _, t in seen)


def test_429_has_remaining_zero_and_retry_after_exactly_until_a_request_frees(
    make_api, settings, store, time_machine
):
    settings.API_RATE_LIMIT = "3/minute"
    client = make_api(["users:read"])
    time_machine.move_to(T0, tick=False)
    answers = []
    for _ in range(3):
        answers.append(client.get("/v1/connection"))
        time_machine.shift(10)
    # Requests at T0, T0+10 s and T0+20 s; the one at T0 frees a request at T0+60 s.
    assert [counted(a) for a in answers] == [(2, 60), (1, 50), (0, 40)]

    limited = client.get("/v1/connection")  # T0+30 s
    assert_envelope(limited, 429, "rate_limited")
    assert limited.headers["Retry-After"] == "30"
    assert counted(limited) == (0, 30)
    assert limited.headers["RateLimit-Policy"] == '"default";q=3;w=60'

    time_machine.shift(29.5)  # T0+59.5 s: still full, half a second rounds up to 1
    limited = client.get("/v1/connection")
    assert limited.status == 429 and limited.headers["Retry-After"] == "1"

    time_machine.shift(0.5)  # T0+60 s: the request of T0 has left the window
    again = client.get("/v1/connection")
    assert again.status == 200
    # The window now holds T0+10, T0+20 and T0+60: the next frees at T0+70.
    assert counted(again) == (0, 10)


def test_refused_requests_are_not_counted(make_api, settings, store, time_machine):
    settings.API_RATE_LIMIT = "2/minute"
    client = make_api(["users:read"])
    time_machine.move_to(T0, tick=False)
    assert [client.get("/v1/connection").status for _ in range(2)] == [200, 200]
    time_machine.shift(30)
    assert [client.get("/v1/connection").status for _ in range(5)] == [429] * 5
    time_machine.shift(30)  # both requests of T0 leave together; the 429s took no place
    assert [client.get("/v1/connection").status for _ in range(3)] == [200, 200, 429]


def test_windows_counted_by_the_limits_library_carry_over_a_deploy(make_api, settings):
    """The key and list layout are those of `limits`' moving window, used before."""
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    from limits import parse
    from limits.storage import storage_from_string
    from limits.strategies import MovingWindowRateLimiter

    settings.RATE_LIMIT_STORAGE_URL = settings.REDIS_URL
    settings.API_RATE_LIMIT = "5/minute"
    client = make_api(["users:read"])
    before = MovingWindowRateLimiter(storage_from_string(settings.REDIS_URL))
    for _ in range(3):
        assert before.hit(parse("5/minute"), "api-key", client.key.pk)
    assert counted(client.get("/v1/connection"))[0] == 1


def test_scope_refusals_and_other_agents_ids_are_counted_and_carry_the_headers(
    make_api, settings, store, other_agent
):
    settings.API_RATE_LIMIT = "10/minute"
    client = make_api(["users:read"])
    denied = client.get("/v1/runs")
    assert_envelope(denied, 403, "insufficient_scope")
    assert counted(denied)[0] == 9
    elsewhere = client.get(f"/v1/agents/{other_agent.pk}/users")
    assert_envelope(elsewhere, 404, "not_found")
    assert counted(elsewhere)[0] == 8
    assert counted(client.get("/v1/users"))[0] == 7


def test_unauthenticated_answers_carry_no_rate_limit(anonymous_api, store):
    response = anonymous_api.get("/v1/connection")
    assert_envelope(response, 401, "unauthorized")
    assert "RateLimit" not in response.headers
    assert "RateLimit-Policy" not in response.headers


def test_a_browser_token_has_its_own_count_and_its_page_may_read_it(
    make_api, settings, store, agent
):
    settings.API_RATE_LIMIT = "4/minute"
    agent.allowed_origins = [ORIGIN]
    agent.save(update_fields=["allowed_origins"])
    minter = make_api(["auth_tokens:create"])
    minted = minter.post("/v1/auth_tokens", json={"external_id": "cust-1"})
    assert minted.status == 201 and counted(minted)[0] == 3
    browser = ApiClient(minted.json()["token"])
    response = browser.get("/v1/me/conversations", headers={"Origin": ORIGIN})
    assert response.status == 200
    assert counted(response)[0] == 3
    exposed = {h.strip() for h in response.headers["Access-Control-Expose-Headers"].split(",")}
    assert {"RateLimit", "RateLimit-Policy", "Retry-After"} <= exposed


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_store_down_serves_without_a_limit_or_headers_and_warns_once_a_request(
    make_api, settings, caplog
):
    settings.API_RATE_LIMIT = "1/minute"
    settings.RATE_LIMIT_STORAGE_URL = f"redis://127.0.0.1:{closed_port()}/0"
    client = make_api(["users:read"])
    caplog.set_level(logging.WARNING, logger="apps.api")
    for expected_warnings in (1, 2, 3):
        response = client.get("/v1/connection")
        assert response.status == 200
        assert "RateLimit" not in response.headers
        assert "RateLimit-Policy" not in response.headers
        warnings = [r for r in caplog.records if r.name == "apps.api"]
        assert len(warnings) == expected_warnings
        assert warnings[-1].levelno == logging.WARNING
        assert "rate-limit store unavailable" in warnings[-1].getMessage()


def monitored(server: redis_lib.Redis, request) -> list[dict]:
    """Every command Redis received while `request()` ran (MONITOR, ended by an ECHO mark)."""
    mark = f"end-of-request-{uuid.uuid4().hex}"
    commands = []
    # The mark goes on a connection made (and its database SELECTed) before the watch starts.
    marker = redis_lib.Redis(**server.connection_pool.connection_kwargs)
    marker.ping()
    with server.monitor() as monitor:
        request()
        marker.echo(mark)
        while True:
            command = monitor.next_command()
            if mark in command["command"]:
                return commands
            commands.append(command)


def one_round_trip_each(server: redis_lib.Redis, request, statuses: tuple[int, ...]) -> None:
    """Each `request()` answers the next of `statuses` having sent Redis exactly one command,
    the script that finds the credential's key and counts the request, which counted (pushed
    a timestamp) only when the answer is not a 429."""
    for expected_status in statuses:
        answers = []
        commands = monitored(server, lambda: answers.append(request()))  # noqa: B023
        assert answers[0].status == expected_status
        # What the script itself runs inside Redis is reported with the client type "lua".
        sent = [c["command"] for c in commands if c.get("client_type") != "lua"]
        assert len(sent) == 1, sent
        assert sent[0].startswith("EVALSHA "), sent
        pushed = [
            c["command"]
            for c in commands
            if c.get("client_type") == "lua" and c["command"].startswith("LPUSH")
        ]
        assert len(pushed) == (0 if expected_status == 429 else 1), pushed


def test_a_request_with_a_cached_key_is_one_redis_round_trip(make_api, settings, redis_store):
    """The key's lookup and the request's count are one script call: nothing else reaches
    Redis, on a counted request and on a refused one."""
    settings.API_RATE_LIMIT = "2/minute"
    client = make_api(["users:read"])
    client.get("/v1/connection")  # loads the script into a fresh Redis, warms the key cache
    one_round_trip_each(redis_store, lambda: client.get("/v1/connection"), (200, 429))


def test_a_browser_token_request_is_one_redis_round_trip(make_api, settings, redis_store, agent):
    """The minting key comes from the cache and the token's own window is counted, together."""
    settings.API_RATE_LIMIT = "2/minute"
    agent.allowed_origins = [ORIGIN]
    agent.save(update_fields=["allowed_origins"])
    minted = make_api(["auth_tokens:create"]).post(
        "/v1/auth_tokens", json={"external_id": "cust-1"}
    )
    browser = ApiClient(minted.json()["token"])

    def request():
        return browser.get("/v1/me/conversations", headers={"Origin": ORIGIN})

    assert counted(request())[0] == 1  # the token's own window: the minting did not count here
    one_round_trip_each(redis_store, request, (200, 429))


def test_a_wrong_secret_for_a_cached_key_is_refused_and_spends_nothing(make_api, settings, store):
    """Knowing a key's public lookup id must not be enough to use up its requests."""
    settings.API_RATE_LIMIT = "3/minute"
    client = make_api(["users:read"])
    assert counted(client.get("/v1/connection"))[0] == 2  # and the key is cached now
    last = client.raw_key[-1]
    forged = ApiClient(client.raw_key[:-1] + ("a" if last != "a" else "b"))
    for _ in range(5):
        response = forged.get("/v1/connection")
        assert_envelope(response, 401, "unauthorized")
        assert "RateLimit" not in response.headers
    assert counted(client.get("/v1/connection"))[0] == 1


def test_the_openapi_document_declares_the_headers_on_every_counted_answer(client):
    document = client.get("/v1/openapi.json").json()
    operations = [
        (f"{method.upper()} {path}", op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in {"get", "post", "patch", "put", "delete"}
    ]
    assert operations
    for where, op in operations:
        for status, response in op["responses"].items():
            headers = response.get("headers", {})
            if status == "401":
                assert "RateLimit" not in headers, where
            else:
                assert {"RateLimit", "RateLimit-Policy"} <= set(headers), f"{where} {status}"
        assert "Retry-After" in op["responses"]["429"]["headers"], where


RATE_TEXTS = [
    "600/minute",
    "20/hour",
    "60 per minute",
    "5/5 minutes",
    "10/second",
    "100/day",
    "1000/2 hours",
    "3 per 10 seconds",
    "7/MINUTE",
]


@pytest.mark.parametrize("text", RATE_TEXTS)
def test_rates_are_read_and_keyed_as_the_limits_library_did(text):
    """Windows counted before the library was dropped carry over: same amount, window, key."""
    from limits import parse

    from apps.api.rates import rate_parse

    theirs, ours = parse(text), rate_parse(text)
    assert (ours.amount, ours.window_seconds) == (theirs.amount, theirs.get_expiry())
    assert ours.key_for("api-key", "key_1") == theirs.key_for("api-key", "key_1")


@pytest.mark.parametrize(
    "text", ["", "600", "0/minute", "ten/minute", "5/0 minutes", "5/fortnight"]
)
def test_a_mistyped_rate_is_refused_naming_it(text):
    from django.core.exceptions import ImproperlyConfigured

    from apps.api.rates import rate_parse

    with pytest.raises(ImproperlyConfigured, match="600/minute"):
        rate_parse(text)


def test_a_mistyped_rate_setting_stops_the_process_at_start():
    import subprocess
    import sys

    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={
            **os.environ,
            "API_RATE_LIMIT": "600 a minute",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0
    assert "API_RATE_LIMIT" in started.stderr and "600 a minute" in started.stderr
