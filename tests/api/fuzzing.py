"""What both schemathesis fuzz tests share: their hypothesis settings and the call that sends a
generated case through the WSGI app with a Bearer credential and checks the answer."""

from hypothesis import HealthCheck, settings

FUZZ_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)


def call_and_validate(case, *, bearer: str) -> None:
    """Never a 5xx, and status, content type and body as the OpenAPI document says."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    from config.wsgi import application

    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {bearer}"}
    response = case.call_wsgi(app=application)
    case.validate_response(
        response,
        checks=(
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ),
    )
