"""A real local HTTP receiver for webhook deliveries (pytest-httpserver on 127.0.0.1)."""

import pytest


@pytest.fixture
def receiver(httpserver, settings):
    """The local endpoint; loopback is let through the network guard for this test only."""
    settings.NETGUARD_ALLOW_LOOPBACK = True
    settings.WEBHOOK_CONNECT_TIMEOUT = 2
    settings.WEBHOOK_READ_TIMEOUT = 2
    return httpserver


def received(httpserver) -> list:
    """The requests the receiver got, in order."""
    return [request for request, _response in httpserver.log]
