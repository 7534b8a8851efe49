"""Fixtures shared by the API platform's tests (both fuzz tests use `fuzz_key`)."""

import pytest


@pytest.fixture
def fuzz_key(make_api, settings):
    """A full-scope key, and Django's connection kept open across raw WSGI calls (as the test
    client does) so requests run inside the test's transaction."""
    from django.core import signals
    from django.db import close_old_connections

    settings.API_RATE_LIMIT = "100000/minute"
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield make_api()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)
