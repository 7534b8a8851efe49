"""No console page answers 500 to what can be typed into its address bar: every query parameter
a page offers (its GET forms' fields and the parameters of its own links) is sent with a NUL
character, which PostgreSQL text cannot hold, and with other junk, one at a time and all at
once; every id in a path is sent with a NUL too. A page may refuse (400) or ignore what it
cannot use, never fail."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl, urlsplit

import pytest

from apps.activity.demo import activity_seed_demo
from apps.activity.models import Conversation, EndUser, Run
from tests.examples import share
from tests.factories import agent_factory, user_factory, workspace_factory
from tests.module_rows import module_rows_made, rows_for_the_module

# One test process runs the whole module (--dist loadgroup), so the demo month of `demo` is
# seeded once per run, not once in each process that draws one of its tests.
pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("console-hostile-queries")]

LIST_PAGES = [
    "/overview/",
    "/conversations/",
    "/users/",
    "/users/suggest/",
    "/runs/",
    "/knowledge/",
    "/knowledge/search/",
    "/webhooks/",
    "/api-keys/",
    "/agents/",
    "/usage/",
    "/tools/",
    "/team/",
    "/audit-log/",
    "/connected-apps/",
    "/retention/",
]
EXPORTS = [
    "/users/export/",
    "/runs/export/",
    "/webhooks/deliveries/export/",
    "/audit-log/export/",
    "/usage/export.csv",
]
ID_PATHS = [
    "/users/{}/",
    "/runs/{}/",
    "/conversations/{}/",
    "/knowledge/{}/",
    "/agents/{}/",
    "/tools/{}/",
    "/webhooks/deliveries/{}/",
    "/team/members/{}/role/",
]
NUL_JUNK = ["a\x00b", "\x00"]
# Each renders the whole page (a NUL is refused before any view runs): `make test-fast` sends a
# share of them to each parameter (tests/examples.py), `make test` all.
OTHER_JUNK = ["-1", "9" * 40, "2026-13-45", "é" * 300, "' OR 1=1 --"]

_FIELD = re.compile(r'<(?:input|select|textarea)\b[^>]*\bname="([^"]+)"', re.S)
_GET_FORM = re.compile(r"<form\b(?![^>]*method=\"post\")[^>]*>(.*?)</form>", re.S | re.I)
_HREF = re.compile(r'href="([^"]*\?[^"]*)"')


def _parameters(page_html: str) -> set[str]:
    """The names a page itself puts in its addresses: GET form fields and its links' queries."""
    names: set[str] = set()
    for form in _GET_FORM.findall(page_html):
        names.update(_FIELD.findall(form))
    for href in _HREF.findall(page_html):
        names.update(name for name, _ in parse_qsl(urlsplit(html.unescape(href)).query))
    names.discard("csrfmiddlewaretoken")
    return names


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    """An owner and an Agent with a month of demo activity, made once for the module (about
    2 s of CPU each time): the tests only read them, each in its own rolled-back savepoint."""
    with rows_for_the_module(django_db_blocker):
        owner = user_factory(email="owner@example.com")
        agent = agent_factory(workspace=workspace_factory(name="Acme", owner=owner))
        activity_seed_demo(agent=agent)
        module_rows_made()
        yield owner, agent


@pytest.fixture
def agent(demo):
    return demo[1]


@pytest.fixture
def console(client, demo):
    owner, _ = demo
    client.force_login(owner)
    return client


def _assert_no_server_error(client, path: str, query: dict[str, str]) -> None:
    response = client.get(path, query)
    if any("\x00" in value for value in query.values()):
        # Refused plainly, whatever the page: no value anywhere can hold a NUL.
        assert response.status_code == 400, f"{path} {query!r} answered {response.status_code}"
        assert "holds a NUL character" in response.content.decode()
    else:
        assert response.status_code < 500, f"{path} {query!r} answered {response.status_code}"


@pytest.mark.parametrize("path", LIST_PAGES + EXPORTS)
def test_every_parameter_of_a_page_survives_junk(console, path):
    first = console.get(path)
    # /users/suggest/ without a query sends the browser back to the list (issue 26, item 3).
    assert first.status_code in (200, 302), path
    is_page = first.status_code == 200 and "html" in first["Content-Type"]
    names = _parameters(first.content.decode()) if is_page else set()
    # The parameters every list reads, whether or not the page links them right now.
    names |= {"q", "sort", "dir", "cursor", "status", "from", "to", "user_id", "agent"}
    for name in sorted(names):
        for value in [*NUL_JUNK, *share(OTHER_JUNK)]:
            _assert_no_server_error(console, path, {name: value})
    _assert_no_server_error(console, path, dict.fromkeys(names, "a\x00b"))


def test_every_detail_page_survives_a_nul_in_its_id(console, agent):
    real = {
        "/users/{}/": EndUser.objects.filter(agent=agent).values_list("id", flat=True).first(),
        "/runs/{}/": Run.objects.filter(agent=agent).values_list("id", flat=True).first(),
        "/conversations/{}/": Conversation.objects.filter(agent=agent)
        .values_list("id", flat=True)
        .first(),
    }
    for pattern in ID_PATHS:
        for value in ["x\x00y", f"{real.get(pattern) or 'id'}\x00"]:
            path = pattern.format(value)
            response = console.get(path)
            assert response.status_code == 404, f"{path!r} answered {response.status_code}"
        if real.get(pattern):
            # The real page, with junk in every parameter it offers.
            path = pattern.format(real[pattern])
            page = console.get(path)
            assert page.status_code == 200, path
            for name in sorted(_parameters(page.content.decode())):
                _assert_no_server_error(console, path, {name: "a\x00b"})
