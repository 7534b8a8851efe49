"""Contract section 7: every error path answers the `{"name", "message"}` envelope."""

import pytest
from django.db import connection
from django.test import override_settings

from apps.common.errors import ERROR_NAMES

pytestmark = pytest.mark.django_db


def assert_envelope(response, status: int, name: str):
    assert response.status == status, response.body
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"name", "message"}
    assert body["name"] == name
    assert body["name"] in ERROR_NAMES
    assert body["message"]
    assert b"<html" not in response.body.lower()
    assert b"Traceback" not in response.body


@pytest.mark.smoke
def test_unknown_path_is_not_found_json(api):
    assert_envelope(api.get("/v1/does-not-exist"), 404, "not_found")
    assert_envelope(api.get("/v1/agents/x/y/z"), 404, "not_found")


@pytest.mark.smoke
def test_wrong_method_is_bad_request_with_allow(api):
    response = api.delete("/v1/connection")
    assert_envelope(response, 400, "bad_request")
    assert "GET" in response.headers["Allow"]


def test_every_response_has_a_request_id(api, anonymous_api):
    for response in (
        api.get("/v1/connection"),
        anonymous_api.get("/v1/connection"),
        api.get("/v1/nope"),
    ):
        assert response.headers["X-Request-Id"]
    echoed = api.get("/v1/connection", headers={"X-Request-Id": "client-req-12345"})
    assert echoed.headers["X-Request-Id"] == "client-req-12345"
    junk = api.get("/v1/connection", headers={"X-Request-Id": "<script>"})
    assert junk.headers["X-Request-Id"].startswith("req_")


def test_request_log_never_contains_the_key(api, caplog):
    caplog.set_level("INFO", logger="apps.request")
    api.get("/v1/connection")
    secret_part = api.raw_key.split("_", 1)[1][12:]
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "apps.request" in {r.name for r in caplog.records}
    assert api.key.prefix in logged
    assert secret_part not in logged
    assert api.raw_key not in logged


def test_unreachable_database_is_service_unavailable(api, django_db_blocker):
    """The request is not processed: 503 with Retry-After, not a 500 or an HTML page."""
    original = dict(connection.settings_dict)
    if connection.vendor != "postgresql":
        pytest.skip("needs a network database to make unreachable")
    connection.close()
    connection.settings_dict["PORT"] = "1"  # nothing listens there
    try:
        response = api.get("/v1/connection")
    finally:
        connection.close()
        connection.settings_dict.update(original)
    assert_envelope(response, 503, "service_unavailable")
    assert response.headers["Retry-After"].isdigit()


@override_settings(DEBUG=False)
def test_uncaught_exception_is_internal_server_error_json(api, monkeypatch):
    from apps.workspaces import connection_api as views

    def explode(*args, **kwargs):
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(views, "iso", explode)
    response = api.get("/v1/connection")
    assert_envelope(response, 500, "internal_server_error")
    assert b"secret internals" not in response.body


def test_rate_limit_is_429_with_integer_retry_after(make_api, settings):
    settings.API_RATE_LIMIT = "3/minute"
    client = make_api(["users:read"])
    statuses = [client.get("/v1/connection").status for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = client.get("/v1/connection")
    assert_envelope(limited, 429, "rate_limited")
    assert limited.headers["Retry-After"].isdigit()
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    # Limits are per key: another key is unaffected.
    assert make_api(["users:read"]).get("/v1/connection").status == 200


def test_rate_limit_store_down_does_not_stop_the_api(make_api, settings):
    settings.API_RATE_LIMIT = "1/minute"
    settings.RATE_LIMIT_STORAGE_URL = "redis://127.0.0.1:1/0"
    client = make_api(["users:read"])
    assert [client.get("/v1/connection").status for _ in range(3)] == [200, 200, 200]


def test_options_is_not_served(api):
    response = api.request("OPTIONS", "/v1/connection")
    assert_envelope(response, 400, "bad_request")
    assert "GET" in response.headers["Allow"]


def test_malformed_json_is_bad_request_and_changes_nothing(api):
    from apps.knowledge.models import KnowledgeDocument

    response = api.post(
        "/v1/knowledge/urls", data=b'{"url": "example.com",', content_type="application/json"
    )
    assert_envelope(response, 400, "bad_request")
    assert "JSON" in response.json()["message"]
    assert KnowledgeDocument.objects.count() == 0


def test_wrong_content_type_is_unsupported_media_type(api):
    response = api.post("/v1/knowledge/urls", data=b"url=example.com", content_type="text/plain")
    assert_envelope(response, 415, "unsupported_media_type")


def test_oversized_json_body_is_payload_too_large(api, settings):
    settings.API_MAX_JSON_BODY_BYTES = 2048
    body = b'{"url": "https://example.com/", "name": "' + b"x" * 5000 + b'"}'
    response = api.post("/v1/knowledge/urls", data=body, content_type="application/json")
    assert_envelope(response, 413, "payload_too_large")


def test_unknown_field_and_wrong_type_are_bad_request_naming_the_field(api):
    unknown = api.post("/v1/knowledge/urls", json={"url": "https://example.com/", "colour": "red"})
    assert_envelope(unknown, 400, "bad_request")
    assert "colour" in unknown.json()["message"]
    wrong = api.post(
        "/v1/knowledge/urls", json={"url": "https://example.com/", "refresh_interval_hours": "24"}
    )
    assert_envelope(wrong, 400, "bad_request")
    assert "refresh_interval_hours" in wrong.json()["message"]


def test_nul_in_a_path_id_is_not_found_and_in_a_query_is_bad_request(api):
    assert_envelope(api.get("/v1/knowledge/doc%00x"), 404, "not_found")
    assert_envelope(
        api.get(f"/v1/agents/{api.key.agent_id}/knowledge/doc%00x/content"), 404, "not_found"
    )
    response = api.get("/v1/knowledge", params={"after": "%00"})
    assert response.status == 400
