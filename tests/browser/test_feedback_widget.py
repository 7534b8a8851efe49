"""An end user's thumbs from a real page in Chromium, with a real browser token, on another
origin than the API: the page lists the assistant's answers of the user's conversation, the
user votes down with a comment and then changes their mind; a page on a foreign origin with the
same token writes nothing."""

import pytest

from apps.scores.models import Score
from tests.activity.factories import conversation_factory, end_user_factory, message_factory
from tests.browser.embedding_pages import page_origins

pytestmark = pytest.mark.django_db(transaction=True)

# The two calls an embedding page makes (docs/scores.md): read the conversation's messages
# and the user's feedback, and PUT a vote on an answer.
PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Support widget</title></head>
<body>
<ul id="answers"></ul>
<p id="status">loading</p>
<script>
  const params = new URLSearchParams(location.hash.slice(1));
  const api = params.get("api"), conversation = params.get("conversation");
  const headers = {Authorization: "Bearer " + params.get("token")};
  const status = (text) => { document.getElementById("status").textContent = text; };
  async function vote(messageId, value, comment) {
    try {
      const response = await fetch(api + "/v1/me/messages/" + messageId + "/feedback", {
        method: "PUT",
        headers: {...headers, "Content-Type": "application/json"},
        body: JSON.stringify({value, comment}),
      });
      const score = await response.json();
      status("voted " + response.status + " " + score.value);
    } catch (error) {
      status("vote blocked: " + error.name);
    }
  }
  async function load() {
    try {
      const messages = await (await fetch(api + "/v1/me/conversations/" + conversation + "/messages", {headers})).json();
      const feedback = await (await fetch(api + "/v1/me/conversations/" + conversation + "/feedback", {headers})).json();
      const votes = Object.fromEntries(feedback.data.map((s) => [s.message_id, s.value]));
      for (const message of messages.data.filter((m) => m.role === "assistant")) {
        const item = document.createElement("li");
        item.dataset.message = message.id;
        item.textContent = message.parts.map((p) => p.text || "").join("") + " ";
        for (const [label, value] of [["Helpful", true], ["Not helpful", false]]) {
          const button = document.createElement("button");
          button.textContent = label;
          button.setAttribute("aria-pressed", String(votes[message.id] === value));
          button.onclick = () => vote(message.id, value, document.getElementById("why").value || null);
          item.append(button);
        }
        document.getElementById("answers").append(item);
      }
      status("loaded");
    } catch (error) {
      status("blocked: " + error.name);
    }
  }
  load();
</script>
<label>Why? <input id="why"></label>
</body></html>
"""


@pytest.fixture
def widget_origin():
    """Start the page on a free port; returns a function giving its origin."""
    yield from page_origins(PAGE)


def test_an_end_user_votes_from_the_embedding_page_and_a_foreign_page_cannot(
    page, live_server, agent, make_api, widget_origin
):
    allowed, foreign = widget_origin(), widget_origin()
    agent.allowed_origins = [allowed]
    agent.save(update_fields=["allowed_origins"])
    me = end_user_factory(agent=agent, external_id="cust-7")
    conversation = conversation_factory(agent=agent, user=me, title="Refund")
    message_factory(
        conversation=conversation, role="user", parts=[{"type": "text", "text": "Refund?"}]
    )
    answer = message_factory(
        conversation=conversation,
        role="assistant",
        parts=[{"type": "text", "text": "Refunds take 30 days."}],
    )
    minter = make_api(["auth_tokens:create"])
    token = minter.post("/v1/auth_tokens", json={"external_id": "cust-7"}).json()["token"]
    fragment = f"#api={live_server.url}&token={token}&conversation={conversation.id}"

    page.goto(f"{allowed}/widget.html{fragment}")
    page.locator("#status", has_text="loaded").wait_for()
    row = page.locator(f"li[data-message='{answer.id}']")
    assert "Refunds take 30 days." in row.inner_text()
    page.fill("#why", "It is 14 days in my country")
    row.get_by_role("button", name="Not helpful").click()
    page.locator("#status", has_text="voted 201 false").wait_for()
    score = Score.objects.get(agent=agent)
    assert (score.name, score.source, score.boolean_value, score.end_user_id) == (
        "user_feedback",
        "end_user",
        False,
        me.id,
    )
    assert score.comment == "It is 14 days in my country"

    # Reloaded, the page shows the vote as left; a new vote changes the one feedback.
    page.reload()
    page.locator("#status", has_text="loaded").wait_for()
    assert row.get_by_role("button", name="Not helpful").get_attribute("aria-pressed") == "true"
    page.fill("#why", "")
    row.get_by_role("button", name="Helpful", exact=True).click()
    page.locator("#status", has_text="voted 200 true").wait_for()
    assert Score.objects.filter(agent=agent).count() == 1
    assert Score.objects.get(agent=agent).boolean_value is True

    # The same token on a foreign page: the reads are withheld by CORS, and a vote (made with
    # the answer's id known) is refused by the server: nothing changes.
    page.goto(f"{foreign}/widget.html{fragment}")
    page.locator("#status", has_text="blocked").wait_for()
    page.evaluate(
        "([id]) => vote(id, false, 'from elsewhere')",
        [answer.id],
    )
    page.locator("#status", has_text="vote blocked: TypeError").wait_for()
    assert Score.objects.get(agent=agent).boolean_value is True
    assert Score.objects.get(agent=agent).comment is None
