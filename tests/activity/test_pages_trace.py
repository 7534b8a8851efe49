"""The run page as a trace: steps in tree order with bars to scale, failures and usage on the
row, each step's input and output as an inert collapsible tree, the answer linked both ways."""

import re
import time
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from apps.activity.models import Message, RunStep
from apps.activity.trace import SHORT_TEXT
from tests.activity.factories import conversation_factory, message_factory, run_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)
PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(1)>"


def _step(run, step_id, *, parent=None, start_ms=0, duration_ms=100, **fields):
    return RunStep.objects.create(
        agent_id=run.agent_id, run_id=run.id, id=step_id, parent_id=parent,
        name=fields.pop("name", step_id), started_at=T0 + timedelta(milliseconds=start_ms),
        ended_at=T0 + timedelta(milliseconds=start_ms + duration_ms), duration_ms=duration_ms,
        created_at=T0, updated_at=T0, **fields,
    )  # fmt: skip


@pytest.fixture
def traced(agent):
    conversation = conversation_factory(agent=agent, id="conv_t")
    run = run_factory(agent=agent, conversation=conversation, id="run_t", created_at=T0)
    _step(run, "st_root", kind="agent", name="invoke_agent support", duration_ms=1000)
    _step(run, "st_model", parent="st_root", kind="model", start_ms=100, duration_ms=400,
          model_id="gpt-4.1-mini", total_tokens=150, credits_charged=0.25,
          input=[{"role": "user", "content": PAYLOAD}], output="x" * (SHORT_TEXT * 3))  # fmt: skip
    _step(run, "st_tool", parent="st_root", kind="tool", start_ms=500, duration_ms=500,
          tool_name="refund", status="failed", error=f"card declined {PAYLOAD}",
          input={PAYLOAD: [1, 2]})  # fmt: skip
    _step(run, "st_search", parent="st_model", kind="retrieval", start_ms=120, duration_ms=30,
          query="refund policy",
          documents=[{"document_id": "doc_1", "title": "Refunds", "passage": "Within 30 days",
                      "score": 0.91},
                     {"title": "Evil", "url": "javascript:alert(1)", "passage": PAYLOAD}])  # fmt: skip
    message_factory(conversation=conversation, id="msg_answer", role="assistant",
                    created_at=T0 + timedelta(seconds=1))  # fmt: skip
    Message.objects.filter(id="msg_answer").update(run_id="run_t")
    return run


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bad: list = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script" and dict(attrs).get("src") is None:
            self.bad.append(attrs)
        for name, value in attrs:
            if name.startswith("on") and name != "onchange":
                self.bad.append((tag, name))
            if name == "href" and value:
                self.hrefs.append(value)
                if value.lower().startswith("javascript:"):
                    self.bad.append((tag, value))


def test_the_run_page_draws_the_steps_as_a_nested_waterfall(client, owner, traced):
    client.force_login(owner)
    html = client.get(reverse("activity:run_detail", args=["run_t"])).content.decode()
    order = re.findall(r'data-step-id="([^"]+)"', html)
    assert order == ["st_root", "st_model", "st_search", "st_tool"]  # tree order
    depths = re.findall(r'class="trace-row depth-(\d+)', html)
    assert depths == ["0", "1", "2", "1"]
    # Bars to scale in a 1000-wide space: the tool starts half way and takes the other half.
    bars = re.findall(r'<rect x="([\d.]+)" y="1" width="([\d.]+)"', html)
    assert bars[3] == ("500.0", "500.0") and bars[1] == ("100.0", "400.0")
    assert "150 tokens" in html and "0.25 credits" in html
    assert 'class="trace-row depth-1 step-failed"' in html and "failed: card declined" in html
    assert reverse("activity:conversation_detail", args=["conv_t"]) + "#message-msg_answer" in html
    links = Links()
    links.feed(html)
    assert links.bad == []


def test_a_step_opens_to_its_input_and_output_rendered_inert(client, owner, traced):
    client.force_login(owner)
    url = reverse("activity:step_detail", args=["run_t", "st_model"])
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment  # the row's body only
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in fragment
    assert "show all (1,200 characters)" in fragment
    assert '<details class="json-node" open>' in fragment
    links = Links()
    links.feed(fragment)
    assert links.bad == []
    page = client.get(url).content.decode()
    assert "<html" in page and "gpt-4.1-mini" in page  # without HTMX: a page of its own

    tool = client.get(reverse("activity:step_detail", args=["run_t", "st_tool"])).content.decode()
    assert 'role="alert"' in tool and "card declined &lt;script&gt;" in tool
    search = client.get(reverse("activity:step_detail", args=["run_t", "st_search"]))
    body = search.content.decode()
    assert reverse("knowledge:document_detail", args=["doc_1"]) in body
    links = Links()
    links.feed(body)
    assert links.bad == [] and not any("javascript" in href for href in links.hrefs)


def test_a_step_of_another_agent_or_run_is_not_found(client, owner, traced, other_agent):
    client.force_login(owner)
    assert client.get(reverse("activity:step_detail", args=["run_t", "nope"])).status_code == 404
    assert client.get(reverse("activity:step_detail", args=["run_x", "st_root"])).status_code == 404


def test_the_transcript_links_the_answer_to_its_run(client, owner, traced):
    client.force_login(owner)
    html = client.get(reverse("activity:conversation_detail", args=["conv_t"])).content.decode()
    assert f'class="message-run" href="{reverse("activity:run_detail", args=["run_t"])}"' in html


def test_five_hundred_steps_render_quickly(client, owner, agent):
    conversation = conversation_factory(agent=agent, id="conv_big")
    run = run_factory(agent=agent, conversation=conversation, id="run_big", created_at=T0)
    steps = [
        RunStep(agent_id=agent.pk, run_id=run.id, id=f"st_{index:04}",
                parent_id=None if index % 10 == 0 else f"st_{index - index % 10:04}",
                kind=("model", "tool", "custom")[index % 3], name=f"step {index}",
                started_at=T0 + timedelta(milliseconds=index * 7), duration_ms=20,
                ended_at=T0 + timedelta(milliseconds=index * 7 + 20), total_tokens=index,
                input={"i": index}, output={"o": "x" * 1000}, created_at=T0, updated_at=T0)
        for index in range(500)
    ]  # fmt: skip
    RunStep.objects.bulk_create(steps)
    client.force_login(owner)
    url = reverse("activity:run_detail", args=["run_big"])
    client.get(url)  # warm: templates compiled, session loaded
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    assert response.content.decode().count('class="trace-row') == 500
    # benchmarks/run_page.py measures it (docs/performance.md); this bound only catches a
    # page gone quadratic on a loaded test machine.
    assert elapsed < 1.5, elapsed
