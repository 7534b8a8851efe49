"""Uploaded files are served only through the views that check who asks (issue 34, section 6):
under DEBUG (`make run`) `/media/<path>` served every stored file to anyone. Against gunicorn
with DEBUG on, as a developer's `make run` answers: the stored file's `/media/` address is 404,
and the document's download in the console still gives it to a member."""

from __future__ import annotations

import httpx
import pytest
from django.test import Client

from apps.knowledge.models import KnowledgeDocument
from apps.workspaces.console import SESSION_AGENT_KEY
from tests.factories import api_key_factory
from tests.web_server import GunicornServer

CONTENT = b"# Private notes\n\nThe launch date is a secret.\n"


@pytest.fixture
def debug_web(transactional_db, settings):
    server = GunicornServer(DEBUG="1", MEDIA_ROOT=str(settings.MEDIA_ROOT)).start()
    yield server
    server.stop()


def _session_cookie(user, agent) -> str:
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_AGENT_KEY] = agent.pk
    session.save()
    return client.cookies["sessionid"].value


def test_a_stored_file_is_not_served_at_its_media_address_under_debug(
    debug_web, settings, owner, agent
):
    _key, raw = api_key_factory(agent=agent, scopes=["knowledge:write"], created_by=owner)
    uploaded = httpx.post(
        f"{debug_web.url}/v1/knowledge/files",
        headers={"Authorization": f"Bearer {raw}"},
        files={"file": ("notes.md", CONTENT, "text/markdown")},
        timeout=30,
    )
    assert uploaded.status_code == 201, uploaded.text
    document = KnowledgeDocument.objects.get(pk=uploaded.json()["id"])
    stored = settings.MEDIA_ROOT / document.file.name
    assert stored.read_bytes() == CONTENT  # the file is there, under MEDIA_ROOT

    for address in (f"/media/{document.file.name}", f"{settings.MEDIA_URL}{document.file.name}"):
        anonymous = httpx.get(f"{debug_web.url}{address}", timeout=30)
        assert anonymous.status_code == 404, address
        assert CONTENT not in anonymous.content

    # Signed in, a member of the Agent's workspace downloads it from the document's page.
    cookies = {"sessionid": _session_cookie(owner, agent)}
    download = httpx.get(
        f"{debug_web.url}/knowledge/{document.pk}/download/", cookies=cookies, timeout=30
    )
    assert download.status_code == 200
    assert download.content == CONTENT
    assert download.headers["content-disposition"].startswith("attachment")
    # Signed out, the download is not given either.
    signed_out = httpx.get(f"{debug_web.url}/knowledge/{document.pk}/download/", timeout=30)
    assert signed_out.status_code in (302, 401, 403, 404)
    assert CONTENT not in signed_out.content
