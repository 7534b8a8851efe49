"""The registry of credential kinds (apps.api.credentials): the apps register theirs at start,
and only one kind may take the values no other recognises."""

import pytest
from django.test import RequestFactory

from apps.api.credentials import credential_kind_register, credential_verify
from apps.common.errors import Unauthorized


def test_every_kind_is_registered_by_its_app_at_start():
    request = RequestFactory().get("/v1/connection")
    messages = {}
    for raw in ("abt_x", "art_x", "oat_x", "something-else"):
        with pytest.raises(Unauthorized) as caught:
            credential_verify(raw, request=request)
        messages[raw] = str(caught.value.message)
    assert messages == {
        "abt_x": "The browser token is not valid.",
        "art_x": "The resource token is not valid.",
        "oat_x": "This is an OAuth token of the Agents MCP server; it works on /mcp only. The "
        "REST API takes an API key, a browser token or the MCP server's resource token.",
        "something-else": "The API key is malformed.",
    }


def test_a_second_kind_for_unrecognised_values_is_refused():
    def verify(raw, request):
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="Only one credential kind"):
        credential_kind_register("another_key", recognizes=None, verify=verify)
    with pytest.raises(Unauthorized, match="malformed"):
        credential_verify("something-else", request=RequestFactory().get("/v1/connection"))
