"""What both schemathesis fuzz tests share: the schema they fuzz, their hypothesis settings and
the call that sends a generated case through the WSGI app with a Bearer credential and checks the
answer."""

from contextlib import contextmanager
from functools import cache

from hypothesis import HealthCheck, settings

from tests.examples import examples

FUZZ_SETTINGS = settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)


@cache
def _application():
    """Django's WSGI handler, as config/wsgi.py serves it. Not config.wsgi itself: importing it
    in a test runs django.setup() again, and the logging it configures then writes to that
    test's captured stderr, closed once the test is done, so every later log line of the test
    process failed (a printed traceback, 3 ms each); it also starts the embedding and language
    models loading in background threads."""
    from django.core.handlers.wsgi import WSGIHandler

    return WSGIHandler()


def call_and_validate(case, *, bearer: str) -> None:
    """Never a 5xx, and status, content type and body as the OpenAPI document says."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {bearer}"}
    response = case.call_wsgi(app=_application())
    case.validate_response(
        response,
        checks=(
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ),
    )


def fuzz_schema_from(document: dict):
    """The schemathesis schema of `document`, checking every response with one resolver.

    schemathesis 3 makes a new reference resolver for each response it checks, and each new one
    walks the whole OpenAPI document to index its subschemas before it resolves the first
    `$ref`: about half of the fuzz tests' CPU (35 ms a response, for 2,000 responses). One
    resolver per schema, with the response's scopes pushed and popped around each check as
    schemathesis does, resolves the same references to the same schemas."""
    import schemathesis
    from schemathesis.specs.openapi.references import ConvertingResolver
    from schemathesis.specs.openapi.schemas import in_scopes

    schema = schemathesis.from_dict(document, base_url="/v1/..", app=None)
    # The method this replaces; if schemathesis renames it, say so rather than fuzz slowly.
    assert callable(schema._validating_response)
    resolver = ConvertingResolver(
        schema.location or "",
        schema.raw_schema,
        nullable_name=schema.nullable_name,
        is_response_schema=True,
    )

    @contextmanager
    def validating_response(self, scopes: list[str]):
        with in_scopes(resolver, scopes):
            yield resolver

    # A subclass, not an attribute: schemathesis clones the schema for each operation it fuzzes
    # (same class, same document), and every clone must check with the same resolver.
    cls = type(schema)
    schema.__class__ = type(cls.__name__, (cls,), {"_validating_response": validating_response})
    return schema
