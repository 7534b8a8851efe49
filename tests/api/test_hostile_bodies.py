"""No request body ends in a 5xx: the fuzz that walks every JSON field with hostile values.

Table-driven rather than random, so every `make test` covers every case (`make test-fast` sends
each operation a share of the values, tests/examples.py): each JSON operation in the
OpenAPI document (operations added later are picked up without touching this file) x each field
of its body (for `POST /v1/ingest`, each field of each record type) x deep nesting, huge
arrays, megabyte strings and every JSON type. Every answer must be below 500 and, when it is an
error, the contract's envelope; a value nested past the limit must be a `400 bad_request` that
names the field.

Bodies are written as bytes: orjson (like most encoders) refuses to write what we send.
"""

from __future__ import annotations

import pytest
from django.test import Client

from apps.common.errors import ERROR_NAMES
from apps.knowledge.models import KnowledgeDocument
from tests.examples import share

pytestmark = pytest.mark.django_db

DEPTH_PAST_ORJSON_DUMPS = 300  # orjson.dumps refuses past 255 levels
DEPTH_PAST_PYTHON_RECURSION = 1000  # str() of it recurses past Python's default limit


def deep_object(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def deep_array(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


# Nesting is checked with exact messages; the rest only for "never a 5xx, always the envelope".
DEEP_VALUES: dict[str, bytes] = {
    "object nested past orjson.dumps": deep_object(DEPTH_PAST_ORJSON_DUMPS),
    "object nested past Python recursion": deep_object(DEPTH_PAST_PYTHON_RECURSION),
    "array nested past orjson.dumps": deep_array(DEPTH_PAST_ORJSON_DUMPS),
}
OTHER_VALUES: dict[str, bytes] = {
    "null": b"null",
    "true": b"true",
    "false": b"false",
    "zero": b"0",
    "negative": b"-1",
    "float": b"1.5",
    "huge float": b"1e308",
    "integer past 64 bits": b"123456789012345678901234567890",
    "empty string": b'""',
    "string": b'"x"',
    "NUL string": b'"a\\u0000b"',
    "lone surrogate": b'"\\ud800"',
    "empty array": b"[]",
    "array of a string": b'["x"]',
    "empty object": b"{}",
    "object": b'{"a": "b"}',
    "array of 10,000 numbers": b"[" + b",".join([b"1"] * 10_000) + b"]",
    "string of 64 KiB": b'"' + b"x" * 64 * 1024 + b'"',
}
# Sent as whole bodies only (per field they would cost seconds in every `make test`).
LARGE_BODIES = [
    b"[" + b",".join([b"1"] * 200_000) + b"]",
    b'"' + b"x" * 1024 * 1024 + b'"',
    b'{"query": "' + b"x" * 1024 * 1024 + b'"}',
    deep_array(2000),
]


def _operations(document: dict, *, agent_id: str, document_id: str):
    """(method, path, schema) of every operation whose body is JSON, in the flat path form
    (the agent form is the same view) unless it only exists in the agent form."""
    flat_paths = {p for p in document["paths"] if not p.startswith("/v1/agents/")}
    for path, item in document["paths"].items():
        if path.startswith("/v1/agents/") and path.replace("/agents/{agentId}", "") in flat_paths:
            continue
        if path.startswith("/v1/me/"):
            # Browser tokens only: an API key is refused before the body is read. Their bodies
            # are fuzzed with a real token in tests/scores/test_api_feedback.py.
            continue
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            concrete = path.replace("{agentId}", agent_id).replace("{id}", document_id)
            yield method, concrete, content["application/json"]["schema"]


def _resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _bodies(document: dict, schema: dict, value: bytes):
    """(field label, body bytes) putting `value` in each field the schema describes."""
    schema = _resolve(document, schema)
    if schema.get("type") == "array":  # POST /v1/ingest: records of several types
        item = _resolve(document, schema["items"])
        for variant in item.get("oneOf", [item]):
            variant = _resolve(document, variant)
            record_type = _resolve(document, variant["properties"]["type"])["enum"][0]
            for field in variant["properties"]:
                if field != "type":
                    yield (
                        f"records[0].{field}",
                        b'[{"type": "%s", "%s": %s}]'
                        % (record_type.encode(), field.encode(), value),
                    )
        return
    for field in schema.get("properties", {}):
        yield field, b'{"%s": %s}' % (field.encode(), value)


def assert_envelope(response, where: str) -> dict | None:
    assert response.status_code < 500, f"{where}: {response.status_code} {response.content[:300]}"
    if response.status_code < 400:
        return None
    assert response["Content-Type"] == "application/json", where
    body = response.json()
    assert set(body) == {"name", "message"} and body["name"] in ERROR_NAMES, where
    return body


@pytest.fixture
def fuzz_targets(api, agent, settings):
    settings.API_RATE_LIMIT = "1000000/minute"
    document = KnowledgeDocument.objects.create(
        agent=agent, name="Target", source_type="url", source_url="https://example.com/"
    )
    openapi = Client().get("/v1/openapi.json").json()
    operations = list(_operations(openapi, agent_id=agent.pk, document_id=document.pk))
    assert {path.rsplit("/v1/", 1)[1] for _, path, _ in operations} >= {
        "ingest",
        "knowledge/search",
        "knowledge/urls",
        f"agents/{agent.pk}/webhook",
    }
    return openapi, operations


def _send(api, method: str, path: str, body: bytes):
    return getattr(api.client, method)(
        path,
        data=body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.raw_key}"},
    )


def test_deeply_nested_value_in_any_field_is_bad_request_naming_it(api, fuzz_targets):
    openapi, operations = fuzz_targets
    checked = 0
    for method, path, schema in operations:
        for label, value in DEEP_VALUES.items():
            for field, body in _bodies(openapi, schema, value):
                where = f"{method.upper()} {path} {field} = {label}"
                response = _send(api, method, path, body)
                error = assert_envelope(response, where)
                assert response.status_code == 400 and error, where
                assert error["name"] == "bad_request", where
                assert error["message"].startswith(field), f"{where}: {error['message']}"
                assert "nested deeper than 64 levels" in error["message"], where
                checked += 1
    assert checked > 100


def test_any_json_value_in_any_field_never_answers_5xx(api, fuzz_targets):
    openapi, operations = fuzz_targets
    for method, path, schema in operations:
        for label, value in share(OTHER_VALUES.items()):
            for field, body in _bodies(openapi, schema, value):
                assert_envelope(_send(api, method, path, body), f"{method} {path} {field}={label}")


def test_hostile_whole_bodies_never_answer_5xx(api, fuzz_targets):
    _, operations = fuzz_targets
    whole_bodies = [*DEEP_VALUES.values(), *OTHER_VALUES.values(), *LARGE_BODIES]
    for method, path, _ in operations:
        for body in whole_bodies:
            assert_envelope(_send(api, method, path, body), f"{method} {path} {body[:20]!r}")


def test_nesting_limit_is_one_setting_and_bodies_within_it_are_accepted(api, agent, settings):
    parts_at_limit = deep_array(62)  # body array + record object + 62 levels = 64
    record = (
        b'[{"type": "conversation", "id": "c_1"}, '
        b'{"type": "message", "id": "msg_1", "conversation_id": "c_1", "role": "user", '
    )
    ok = _send(api, "post", "/v1/ingest", record + b'"parts": ' + parts_at_limit + b"}]")
    assert ok.status_code == 200, ok.content
    too_deep = _send(api, "post", "/v1/ingest", record + b'"parts": [' + parts_at_limit + b"]}]")
    assert too_deep.status_code == 400
    assert too_deep.json()["message"].startswith("records[1].parts[0]")
    settings.API_MAX_JSON_DEPTH = 3
    shallow = _send(api, "post", "/v1/knowledge/search", b'{"query": [[["x"]]]}')
    assert shallow.status_code == 400
    assert shallow.json()["message"].startswith("query[0][0]: JSON nested deeper than 3 levels")
