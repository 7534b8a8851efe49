"""Every action a console page offers is one the signed-in role may use (issue 38, defect 1).

For each page of the navigation (and an Agent's page), as an owner and as a member: every
form that posts is submitted as the browser would (HTMX forms with HTMX's header) with the
values the page filled in, and no answer, nor the next page view, may be a refusal. A page
that offers a member an owner's action fails here.
"""

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from apps.workspaces.console import NAVIGATION
from tests.conftest import console_client
from tests.factories import api_key_factory

pytestmark = pytest.mark.django_db

REFUSAL = re.compile(
    r"Only (workspace )?owners? can|Only a workspace owner can|<h1>Owners only</h1>", re.I
)
# Forms of the page's frame, not of the page itself.
FRAME_ACTIONS = ("/logout/", "/agent/switch/")


class _Forms(HTMLParser):
    """The page's posting forms: action and the values a submit would send."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._form: dict | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            action = a.get("hx-post") or (
                a.get("action") if (a.get("method") or "").lower() == "post" else None
            )
            self._form = (
                {"action": action, "htmx": "hx-post" in a, "data": {}, "id": a.get("id")}
                if action
                else None
            )
            if self._form:
                self.forms.append(self._form)
            return
        if self._form is None:
            return
        name = a.get("name")
        if tag == "input" and name and "disabled" not in a:
            kind = (a.get("type") or "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind in ("submit", "button", "file"):
                return
            self._form["data"].setdefault(name, []).append(a.get("value") or "")
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select:
            data = self._form["data"]
            if self._select not in data or "selected" in a:
                data[self._select] = [a.get("value") or ""]
        elif tag == "textarea" and name:
            self._textarea = name
            self._form["data"].setdefault(name, [""])

    def handle_data(self, data):
        if self._form is not None and self._textarea:
            self._form["data"][self._textarea] = [data]

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def _pages(agent) -> list[str]:
    urls = []
    for _label, url_name, _section, _owners_only in NAVIGATION:
        try:
            urls.append(reverse(url_name))
        except Exception:
            continue
    urls.append(reverse("workspaces:agent_detail", args=[agent.pk]))
    return urls


@pytest.fixture
def seeded(agent, owner, member):
    """Something on every page for an action to act on: each person's own key."""
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name="Owner's key")
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=member, name="Member's key")
    return agent


@pytest.mark.parametrize("role", ["owner", "member"])
def test_no_page_offers_an_action_the_role_is_refused(role, seeded, owner, member):
    user = owner if role == "owner" else member
    refused = []
    for url in _pages(seeded):
        client = console_client(user, seeded)
        done: set[str] = set()
        while True:
            # The page as it is now: an earlier action (a transfer of ownership) may have
            # changed what it offers.
            response = client.get(url)
            if response.status_code == 403:
                break  # owners-only (members do not see it in the menu), or just left
            assert response.status_code == 200, url
            parser = _Forms()
            parser.feed(response.content.decode())
            todo = [
                form
                for form in parser.forms
                if not form["action"].startswith(FRAME_ACTIONS)
                and "bulk" not in form["action"]
                and form["action"] not in done
            ]
            if not todo:
                break
            form = todo[0]
            done.add(form["action"])
            headers = {"HTTP_HX_REQUEST": "true"} if form["htmx"] else {}
            answer = client.post(form["action"], form["data"], follow=True, **headers)
            if "You left" in answer.content.decode():
                break
            after = client.get(url)
            for text in (answer.content.decode(), after.content.decode()):
                if answer.status_code == 403 or REFUSAL.search(text):
                    refused.append(f"{url} offers {form['action']}")
                    break
    assert refused == []
