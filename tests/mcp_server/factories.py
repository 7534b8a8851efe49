"""Factories for the OAuth rows of the MCP server: registered client applications."""

import itertools

from oauth2_provider.models import Application

_counter = itertools.count(1)


def oauth_application_factory(**fields) -> Application:
    """A registered client; a public one with a loopback redirect unless told otherwise."""
    n = next(_counter)
    defaults = {
        "name": f"Client {n}",
        "client_type": Application.CLIENT_PUBLIC,
        "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
        "redirect_uris": f"http://127.0.0.1:{8000 + n}/callback",
    }
    defaults.update(fields)
    return Application.objects.create(**defaults)
