"""The OpenAPI document: valid, complete, and true to what the service answers.

schemathesis fuzzes every operation that exists (it reads the document, so operations added
later are covered without touching this file) and asserts no 5xx and responses that match.
"""

import pytest
import schemathesis
from django.test import Client
from openapi_spec_validator import validate

from apps.api.scopes import ALL_SCOPES
from tests.api.fuzzing import FUZZ_SETTINGS, call_and_validate, fuzz_schema_from
from tests.examples import share

pytestmark = pytest.mark.django_db


def fetch_document() -> dict:
    response = Client().get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def openapi_document(db) -> dict:
    return fetch_document()


def test_document_is_valid_openapi_3_with_contract_version(openapi_document):
    validate(openapi_document)
    assert openapi_document["openapi"].startswith("3.")
    assert openapi_document["info"]["version"] == "1.1.0"
    schemes = openapi_document["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["bearerAuth"]["description"],
    }


def _operations(document: dict) -> list[tuple[str, str, dict]]:
    """(path, method, operation) of every operation the document lists."""
    return [
        (path, method, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in {"get", "post", "patch", "put", "delete"}
    ]


def test_every_operation_declares_scope_security_and_errors(openapi_document):
    operations = _operations(openapi_document)
    assert operations
    for path, method, op in operations:
        where = f"{method.upper()} {path}"
        # POST /v1/auth_tokens also takes the contract's X-Service-Agent-Key header.
        assert {"bearerAuth": []} in op.get("security", []), where
        assert set().union(*op["security"]) <= {"bearerAuth", "serviceAgentKey"}, where
        for status in ("400", "401", "403", "429", "500", "503"):
            assert status in op["responses"], f"{where} lacks {status}"
        scope = op.get("x-required-scope")
        if path.endswith("/connection"):
            assert scope is None
        else:
            assert scope in ALL_SCOPES, where
        assert "Retry-After" in op["responses"]["429"]["headers"], where


def test_docs_page_is_served_with_local_assets(client):
    response = client.get("/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn" not in html.lower()


schema = schemathesis.from_pytest_fixture("fuzz_schema")


@pytest.fixture
def fuzz_schema(db):
    """Every operation; under `make test-fast`'s profile a third of them, drawn anew each run
    (tests/examples.py `share`), so a few runs of the loop still send every one."""
    document = fetch_document()
    operations = [f"{method.upper()} {path}" for path, method, _op in _operations(document)]
    schema = fuzz_schema_from(document)
    # The names schemathesis gives the operations are these: none is skipped unseen.
    assert {result.ok().verbose_name for result in schema.get_all_operations()} == set(operations)
    chosen = set(share(operations))
    return schema.include(func=lambda context: context.operation.verbose_name in chosen)


@schema.parametrize()
@FUZZ_SETTINGS
def test_fuzz_every_operation(case, fuzz_key):
    call_and_validate(case, bearer=fuzz_key.raw_key)


def test_path_parameters_carry_the_contracts_names(openapi_document):
    retry = "/v1/agents/{agentId}/webhook/deliveries/{deliveryId}/retry"
    assert retry in openapi_document["paths"]
    names = [
        p["name"]
        for p in openapi_document["paths"][retry]["post"]["parameters"]
        if p["in"] == "path"
    ]
    assert names == ["agentId", "deliveryId"]
    assert not any("{agent_id}" in path for path in openapi_document["paths"])
