"""Console pages while PostgreSQL is unreachable: a styled 503 page with Retry-After, one warning
line per request (no traceback), and normal pages again as soon as the database is back.

The machine's PostgreSQL is never stopped: the test points its connection at a closed port, as
tests/api/test_errors.py does for the API's 503.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ["/", "/runs/", "/conversations/", "/knowledge/", "/api-keys/", "/webhooks/"]


@contextmanager
def database_unreachable():
    if connection.vendor != "postgresql":
        pytest.skip("needs a network database to make unreachable")
    original = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["PORT"] = "1"  # nothing listens there
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.update(original)


def test_console_pages_answer_a_styled_503_and_recover(client, owner, agent, caplog):
    client.force_login(owner)
    assert client.get("/api-keys/").status_code == 200
    caplog.set_level(logging.INFO)
    caplog.clear()
    with database_unreachable():
        responses = [client.get(page) for page in PAGES]
        posted = client.post("/api-keys/", {"name": "During the outage", "scopes": "runs:read"})
        api = client.get("/v1/connection", headers={"Authorization": "Bearer ack_" + "x" * 40})
    for page, response in zip([*PAGES, "POST /api-keys/"], [*responses, posted], strict=True):
        assert response.status_code == 503, page
        assert response["Retry-After"].isdigit(), page
        html = response.content.decode()
        assert "Temporarily unavailable" in html and "<style>" in html, page
        assert "Traceback" not in html, page
    assert api.status_code == 503 and api["Retry-After"].isdigit()

    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    warnings = [r for r in caplog.records if r.name == "apps.console"]
    assert len(warnings) == len(PAGES) + 1
    assert all(r.levelno == logging.WARNING for r in warnings)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

    # Back by itself: the same session is served normally again.
    assert client.get("/api-keys/").status_code == 200
