"""Attacker-controlled strings never become markup: every activity page is parsed and no
script, event-handler attribute or javascript: URL that came from recorded data survives."""

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from apps.activity.models import Conversation, EndUser, Message, Run

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
JS_URL = "javascript:alert(1)"
PAYLOAD = f"{SCRIPT}{IMG}\"'><svg onload=alert(1)>"


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self.handlers: list[tuple[str, str, str]] = []
        self.urls: list[tuple[str, str, str]] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script":
            self._in_script = attributes
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name, value or ""))
            if name in ("href", "src", "action", "formaction", "xlink:href"):
                self.urls.append((tag, name, value or ""))

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts.append((self._in_script, data))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None


@pytest.fixture
def hostile(agent):
    user = EndUser.objects.create(
        id="usr_evil", agent=agent, external_id=PAYLOAD, display_name=PAYLOAD, email=PAYLOAD,
        avatar_url=JS_URL, identity_type="user", first_seen_at="2025-01-01T00:00:00Z",
        last_seen_at="2025-01-02T00:00:00Z",
    )  # fmt: skip
    conversation = Conversation.objects.create(
        id="conv_evil", agent=agent, user=user, title=PAYLOAD, status="completed",
        source="embed", created_at="2025-01-01T00:00:00Z", updated_at="2025-01-02T00:00:00Z",
    )  # fmt: skip
    parts = [
        {"type": "text", "text": f"{PAYLOAD}\n\n[click]({JS_URL}) <a href=\"{JS_URL}\">x</a>"},
        {"type": "reasoning", "text": PAYLOAD},
        {"type": f"tool-{PAYLOAD}", "toolCallId": PAYLOAD, "state": PAYLOAD,
         "input": {PAYLOAD: PAYLOAD}, "output": PAYLOAD, "errorText": PAYLOAD},
        {"type": "dynamic-tool", "toolName": PAYLOAD, "input": [PAYLOAD]},
        {"type": "file", "url": JS_URL, "filename": PAYLOAD, "mediaType": PAYLOAD},
        {"type": "source-url", "url": " JavaScript:alert(1)", "title": PAYLOAD},
        {"type": "source-document", "url": "data:text/html,<script>alert(1)</script>", "title": PAYLOAD},
        {"type": PAYLOAD, "data": PAYLOAD},
        PAYLOAD,
    ]  # fmt: skip
    Message.objects.create(
        id="msg_evil", agent=agent, conversation=conversation, role="assistant", parts=parts,
        source_id=PAYLOAD, created_at="2025-01-01T00:00:01Z",
    )  # fmt: skip
    run = Run.objects.create(
        id="run_evil", agent=agent, conversation=conversation, user=user, request_id=PAYLOAD,
        status="failed", model_id=PAYLOAD, effort=PAYLOAD[:64], sdk_version=PAYLOAD[:64],
        tool_names=[PAYLOAD], failed_tool_names=[PAYLOAD], component_kinds=[PAYLOAD],
        error_code=PAYLOAD, created_at="2025-01-01T00:00:01Z", updated_at="2025-01-01T00:00:02Z",
    )  # fmt: skip
    return {"user": user, "conversation": conversation, "run": run}


def _pages(hostile):
    return [
        reverse("activity:overview") + "?days=90",
        reverse("activity:conversation_list"),
        reverse("activity:conversation_list") + "?q=%3Cscript%3E",
        reverse("activity:conversation_detail", args=["conv_evil"]),
        reverse("activity:user_list"),
        reverse("activity:user_detail", args=["usr_evil"]),
        reverse("activity:run_list"),
        reverse("activity:run_list") + "?conversation_id=%3Cscript%3Ealert(1)%3C/script%3E",
        reverse("activity:run_detail", args=["run_evil"]),
    ]


@pytest.mark.smoke
def test_no_recorded_payload_survives_on_any_activity_page(client, owner, hostile):
    client.force_login(owner)
    for url in _pages(hostile):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url
        assert "<svg onload" not in html, url
        parsed = Collector()
        parsed.feed(html)
        # The layout's own Agent switcher is the one handler a page may carry.
        layout = ("select", "onchange", "this.form.submit()")
        assert [h for h in parsed.handlers if h != layout] == [], (url, parsed.handlers)
        for attributes, body in parsed.scripts:
            assert "alert" not in body, (url, body)
            assert set(attributes) <= {"src", "defer", "type"}, (url, attributes)
        for tag, name, value in parsed.urls:
            scheme = value.strip().lower()
            assert not scheme.startswith(("javascript:", "data:", "vbscript:")), (url, tag, name)


def test_the_payload_is_shown_as_text(client, owner, hostile):
    client.force_login(owner)
    html = client.get(reverse("activity:conversation_detail", args=["conv_evil"])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
