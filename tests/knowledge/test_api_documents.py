"""The /v1/knowledge contract: shapes, creation rules, errors, scopes and tenancy."""

from __future__ import annotations

import pytest

from apps.knowledge import pipeline
from apps.knowledge.models import KnowledgeChunk, KnowledgeContentVersion, KnowledgeDocument
from tests.knowledge.conftest import make_file_document, upload

DOCUMENT_KEYS = {
    "object",
    "id",
    "name",
    "source_type",
    "source_url",
    "file_name",
    "file_size_bytes",
    "is_enabled",
    "status",
    "error_message",
    "refresh_status",
    "refresh_error_message",
    "refresh_interval_hours",
    "character_count",
    "last_checked_at",
    "last_synced_at",
    "next_refresh_at",
    "created_at",
    "updated_at",
}
MARKDOWN = b"# Returns policy\n\nCustomers may return unopened items within thirty days.\n"


def post_file(api, data: bytes, file_name: str = "policy.md", **fields):
    return api.post("/v1/knowledge/files", data={"file": upload(data, file_name), **fields})


def assert_error(response, status: int, name: str) -> dict:
    assert response.status == status, response.body
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"name", "message"}
    assert body["name"] == name
    return body


# --- POST /knowledge/files ------------------------------------------------------------------


@pytest.mark.smoke
def test_upload_creates_processing_document_with_contract_fields(api):
    response = post_file(api, MARKDOWN)
    assert response.status == 201
    body = response.json()
    assert set(body) == DOCUMENT_KEYS
    assert body["object"] == "knowledge_document"
    assert body["id"].startswith("doc_")
    assert body["status"] == "processing"
    assert body["refresh_status"] == "idle"
    assert body["source_type"] == "file"
    assert body["source_url"] is None
    assert body["name"] == body["file_name"] == "policy.md"
    assert body["file_size_bytes"] == len(MARKDOWN)
    assert body["is_enabled"] is True
    assert body["refresh_interval_hours"] is None
    assert body["character_count"] is None
    assert body["created_at"].endswith("Z")


def test_upload_name_defaults_to_file_name_cut_to_120(api):
    long_name = "a" * 200 + ".md"
    body = post_file(api, MARKDOWN, long_name).json()
    assert body["name"] == "a" * 120
    assert body["file_name"] == long_name


def test_upload_with_name_uses_it(api):
    assert post_file(api, MARKDOWN, name="Returns").json()["name"] == "Returns"


def test_upload_rejects_name_over_120(api):
    assert_error(post_file(api, MARKDOWN, name="x" * 121), 400, "bad_request")


@pytest.mark.smoke
def test_upload_of_json_body_is_unsupported_media_type(api):
    response = api.post("/v1/knowledge/files", json={"file": "hello"})
    assert_error(response, 415, "unsupported_media_type")


def test_upload_without_file_field_is_bad_request(api):
    response = api.post("/v1/knowledge/files", data={"name": "x"})
    assert_error(response, 400, "bad_request")


@pytest.mark.smoke
def test_upload_type_comes_from_bytes_not_name(api):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(64)
    body = assert_error(post_file(api, png, "report.pdf"), 415, "unsupported_media_type")
    assert "PNG image" in body["message"]
    assert not KnowledgeDocument.objects.exists()


def test_upload_of_identical_content_is_conflict_naming_document(api):
    first = post_file(api, MARKDOWN, "a.md").json()
    body = assert_error(post_file(api, MARKDOWN, "b.md"), 409, "conflict")
    assert first["id"] in body["message"]
    assert "a.md" in body["message"]


def test_same_file_for_another_agent_is_accepted(api, make_api, sibling_agent):
    post_file(api, MARKDOWN)
    assert post_file(make_api(for_agent=sibling_agent), MARKDOWN).status == 201


def test_upload_over_limit_is_payload_too_large(api, settings):
    settings.KNOWLEDGE_MAX_UPLOAD_BYTES = 1024
    response = post_file(api, b"word " * 1000)
    assert_error(response, 413, "payload_too_large")
    assert not KnowledgeDocument.objects.exists()


def test_uploaded_file_is_stored_under_media_root(api, media_root):
    body = post_file(api, MARKDOWN).json()
    document = KnowledgeDocument.objects.get(pk=body["id"])
    assert document.file.path.startswith(str(media_root))
    with open(document.file.path, "rb") as stored:
        assert stored.read() == MARKDOWN


# --- POST /knowledge/urls -------------------------------------------------------------------


@pytest.mark.smoke
def test_url_bare_hostname_becomes_https(api, loopback):
    response = api.post("/v1/knowledge/urls", json={"url": "localhost"})
    assert response.status == 201, response.body
    body = response.json()
    assert set(body) == DOCUMENT_KEYS
    assert body["source_url"] == "https://localhost/"
    assert body["source_type"] == "url"
    assert body["status"] == "processing"
    assert body["refresh_interval_hours"] == 24
    assert body["next_refresh_at"] is None
    assert body["file_name"] is None and body["file_size_bytes"] is None


def test_url_takes_name_and_interval(api, loopback):
    body = api.post(
        "/v1/knowledge/urls",
        json={"url": "http://127.0.0.1:8000/docs", "name": "Docs", "refresh_interval_hours": 6},
    ).json()
    assert body["name"] == "Docs"
    assert body["refresh_interval_hours"] == 6


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost:8080/",  # a name that resolves to loopback
        "http://10.0.0.1/",
        "http://192.168.1.10/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[fd00::1]/",
        "http://0.0.0.0/",
        "http://2130706433/",
        "ftp://example.com/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://user:secret@example.com/",
    ],
)
def test_url_that_is_not_public_is_bad_request(api, url):
    body = assert_error(api.post("/v1/knowledge/urls", json={"url": url}), 400, "bad_request")
    assert body["message"].startswith("url:")
    assert not KnowledgeDocument.objects.exists()


def test_url_resolving_to_loopback_names_the_reason(api):
    body = api.post("/v1/knowledge/urls", json={"url": "localhost"}).json()
    assert "not public" in body["message"]


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"url": ""},
        {"url": 12},
        {"url": "localhost", "extra": 1},
        {"url": "localhost", "refresh_interval_hours": "24"},
        {"url": "localhost", "refresh_interval_hours": True},
        {"url": "localhost", "refresh_interval_hours": 7},
        {"url": "localhost", "name": ""},
        {"url": "localhost", "name": "n" * 121},
        [],
    ],
)
def test_url_body_is_strict(api, loopback, payload):
    assert_error(api.post("/v1/knowledge/urls", json=payload), 400, "bad_request")


def test_same_normalized_url_is_conflict(api, loopback):
    first = api.post("/v1/knowledge/urls", json={"url": "http://LOCALHOST:80/a"}).json()
    body = assert_error(
        api.post("/v1/knowledge/urls", json={"url": "http://localhost/a"}), 409, "conflict"
    )
    assert first["id"] in body["message"]


# --- GET /knowledge, /knowledge/{id}, /knowledge/{id}/content ----------------------------------


def test_list_is_newest_first_with_keyset_pages(api, agent):
    ids = [
        post_file(api, f"# Doc {n}\n\nbody {n}".encode(), f"{n}.md").json()["id"] for n in range(5)
    ]
    first = api.get("/v1/knowledge", params={"limit": 2}).json()
    assert set(first) == {"object", "data", "has_more", "next_cursor"}
    assert first["object"] == "list" and first["has_more"] is True
    seen = [d["id"] for d in first["data"]]
    cursor = first["next_cursor"]
    while cursor:
        page = api.get("/v1/knowledge", params={"limit": 2, "after": cursor}).json()
        seen += [d["id"] for d in page["data"]]
        cursor = page["next_cursor"]
    assert seen == list(reversed(ids))
    assert all(set(d) == DOCUMENT_KEYS for d in first["data"])


def test_list_rejects_limit_over_100(api):
    assert_error(api.get("/v1/knowledge", params={"limit": 101}), 400, "bad_request")


def test_list_shows_only_own_agents_documents(api, other_agent):
    make_file_document(other_agent, MARKDOWN, ingest=False)
    assert api.get("/v1/knowledge").json()["data"] == []


def test_agent_scoped_path_serves_the_same_document(api, agent):
    document = make_file_document(agent, MARKDOWN, ingest=False)
    response = api.get(f"/v1/agents/{agent.pk}/knowledge/{document.pk}")
    assert response.status == 200
    assert response.json()["id"] == document.pk


def test_other_agents_document_is_not_found_everywhere(api, other_agent):
    document = make_file_document(other_agent, MARKDOWN)
    base = f"/v1/knowledge/{document.pk}"
    assert_error(api.get(base), 404, "not_found")
    assert_error(api.get(f"{base}/content"), 404, "not_found")
    assert_error(api.patch(base, json={"name": "mine"}), 404, "not_found")
    assert_error(api.delete(base), 404, "not_found")
    assert_error(api.post(f"{base}/refresh"), 404, "not_found")
    assert_error(
        api.patch(f"{base}/schedule", json={"refresh_interval_hours": 6}), 404, "not_found"
    )
    assert KnowledgeDocument.objects.filter(pk=document.pk, name="notes.md").exists()


@pytest.mark.smoke
def test_content_is_conflict_before_indexing_then_markdown(api, agent):
    document = make_file_document(agent, MARKDOWN, ingest=False)
    assert_error(api.get(f"/v1/knowledge/{document.pk}/content"), 409, "conflict")
    assert pipeline.document_ingest(document_id=document.pk) == "ready"
    response = api.get(f"/v1/knowledge/{document.pk}/content")
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/markdown; charset=utf-8"
    assert "Customers may return unopened items" in response.body.decode()
    body = api.get(f"/v1/knowledge/{document.pk}").json()
    assert body["status"] == "ready"
    assert body["character_count"] == len(response.body.decode())
    assert body["last_synced_at"] is not None


# --- PATCH /knowledge/{id} ------------------------------------------------------------------


def test_patch_renames_and_disables(api, agent):
    document = make_file_document(agent, MARKDOWN)
    body = api.patch(f"/v1/knowledge/{document.pk}", json={"name": "Returns"}).json()
    assert body["name"] == "Returns" and body["is_enabled"] is True
    body = api.patch(f"/v1/knowledge/{document.pk}", json={"is_enabled": False}).json()
    assert body["name"] == "Returns" and body["is_enabled"] is False
    assert set(body) == DOCUMENT_KEYS


@pytest.mark.parametrize(
    "payload",
    [{}, {"is_enabled": "false"}, {"is_enabled": 0}, {"name": ""}, {"name": "x" * 121}, {"x": 1}],
)
def test_patch_body_is_strict(api, agent, payload):
    document = make_file_document(agent, MARKDOWN, ingest=False)
    assert_error(api.patch(f"/v1/knowledge/{document.pk}", json=payload), 400, "bad_request")


# --- DELETE /knowledge/{id} -----------------------------------------------------------------


def test_delete_purges_rows_and_stored_file(api, agent, django_capture_on_commit_callbacks):
    document = make_file_document(agent, MARKDOWN)
    folder = document.file.path.rsplit("/", 1)[0]
    assert KnowledgeChunk.objects.filter(document_id=document.pk).exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/v1/knowledge/{document.pk}")
    assert response.status == 204
    assert response.body == b""
    assert not KnowledgeDocument.objects.filter(pk=document.pk).exists()
    assert not KnowledgeContentVersion.objects.filter(document_id=document.pk).exists()
    assert not KnowledgeChunk.objects.filter(document_id=document.pk).exists()
    import os

    assert not os.path.exists(folder)
    assert_error(api.delete(f"/v1/knowledge/{document.pk}"), 404, "not_found")


# --- POST /knowledge/{id}/refresh and PATCH /knowledge/{id}/schedule ---------------------------


def test_refresh_of_file_document_is_conflict(api, agent):
    document = make_file_document(agent, MARKDOWN)
    assert_error(api.post(f"/v1/knowledge/{document.pk}/refresh"), 409, "conflict")


def test_refresh_while_first_ingestion_processing_is_conflict(api, loopback):
    document = api.post("/v1/knowledge/urls", json={"url": "localhost"}).json()
    assert_error(api.post(f"/v1/knowledge/{document['id']}/refresh"), 409, "conflict")


def test_refresh_of_url_document_is_accepted_once(
    api, agent, loopback, django_capture_on_commit_callbacks
):
    document = KnowledgeDocument.objects.create(
        agent=agent,
        name="Docs",
        source_type="url",
        source_url="http://127.0.0.1:9/",
        normalized_url="http://127.0.0.1:9/",
        status="ready",
        refresh_interval_hours=24,
    )
    with django_capture_on_commit_callbacks() as first_callbacks:
        first = api.post(f"/v1/knowledge/{document.pk}/refresh")
    assert first.status == 202
    assert first.json()["refresh_status"] == "refreshing"
    assert set(first.json()) == DOCUMENT_KEYS
    with django_capture_on_commit_callbacks() as second_callbacks:
        second = api.post(f"/v1/knowledge/{document.pk}/refresh")
    assert second.status == 202
    assert second.json()["refresh_status"] == "refreshing"
    assert len(first_callbacks) == 1
    assert len(second_callbacks) == 0  # no second refresh queued


def test_schedule_sets_interval_and_zero_clears_next_refresh(api, agent):
    from datetime import UTC, datetime

    checked = datetime(2025, 1, 1, 12, tzinfo=UTC)
    document = KnowledgeDocument.objects.create(
        agent=agent,
        name="Docs",
        source_type="url",
        source_url="https://example.com/",
        normalized_url="https://example.com/",
        status="ready",
        refresh_interval_hours=24,
        last_checked_at=checked,
    )
    body = api.patch(
        f"/v1/knowledge/{document.pk}/schedule", json={"refresh_interval_hours": 6}
    ).json()
    assert body["refresh_interval_hours"] == 6
    assert body["next_refresh_at"] == "2025-01-01T18:00:00.000Z"
    body = api.patch(
        f"/v1/knowledge/{document.pk}/schedule", json={"refresh_interval_hours": 0}
    ).json()
    assert body["refresh_interval_hours"] == 0
    assert body["next_refresh_at"] is None


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"refresh_interval_hours": 7},
        {"refresh_interval_hours": "6"},
        {"refresh_interval_hours": 6.0},
    ],
)
def test_schedule_body_is_strict(api, agent, loopback, payload):
    document = api.post("/v1/knowledge/urls", json={"url": "localhost"}).json()
    response = api.patch(f"/v1/knowledge/{document['id']}/schedule", json=payload)
    assert_error(response, 400, "bad_request")


def test_schedule_of_file_document_is_bad_request(api, agent):
    document = make_file_document(agent, MARKDOWN, ingest=False)
    response = api.patch(
        f"/v1/knowledge/{document.pk}/schedule", json={"refresh_interval_hours": 6}
    )
    assert_error(response, 400, "bad_request")


# --- scopes ---------------------------------------------------------------------------------

OPERATIONS = [
    ("get", "/v1/knowledge", None, "knowledge:read"),
    ("get", "/v1/knowledge/{id}", None, "knowledge:read"),
    ("get", "/v1/knowledge/{id}/content", None, "knowledge:read"),
    ("post", "/v1/knowledge/search", {"query": "x"}, "knowledge:read"),
    ("post", "/v1/knowledge/urls", {"url": "localhost"}, "knowledge:write"),
    ("post", "/v1/knowledge/files", None, "knowledge:write"),
    ("patch", "/v1/knowledge/{id}", {"name": "n"}, "knowledge:write"),
    ("delete", "/v1/knowledge/{id}", None, "knowledge:write"),
    ("post", "/v1/knowledge/{id}/refresh", None, "knowledge:write"),
    ("patch", "/v1/knowledge/{id}/schedule", {"refresh_interval_hours": 6}, "knowledge:write"),
]


@pytest.mark.parametrize(("method", "path", "payload", "scope"), OPERATIONS)
def test_operation_without_its_scope_is_insufficient_scope(
    make_api, agent, method, path, payload, scope
):
    document = make_file_document(agent, MARKDOWN, ingest=False)
    other = "knowledge:write" if scope == "knowledge:read" else "knowledge:read"
    client = make_api(scopes=[other, "runs:read"])
    kwargs = {"json": payload} if payload is not None else {}
    response = getattr(client, method)(path.format(id=document.pk), **kwargs)
    body = assert_error(response, 403, "insufficient_scope")
    assert scope in body["message"]
    assert f'scope="{scope}"' in response.headers["WWW-Authenticate"]


def test_missing_key_is_unauthorized(anonymous_api):
    response = anonymous_api.get("/v1/knowledge")
    assert_error(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
