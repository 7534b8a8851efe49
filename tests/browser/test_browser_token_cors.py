"""A browser token used from real pages in Chromium: a page on one of the Agent's allowed
origins reads its end user's conversations; a page on a foreign origin is blocked by CORS."""

import pytest

from tests.activity.factories import conversation_factory, end_user_factory
from tests.browser.embedding_pages import page_origins

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Support widget</title></head>
<body>
<ul id="conversations"></ul>
<p id="status">loading</p>
<script>
  const params = new URLSearchParams(location.hash.slice(1));
  fetch(params.get("api") + "/v1/me/conversations", {
    headers: {Authorization: "Bearer " + params.get("token")},
  })
    .then((response) => response.json())
    .then((page) => {
      for (const conversation of page.data) {
        const item = document.createElement("li");
        item.textContent = conversation.title;
        document.getElementById("conversations").append(item);
      }
      document.getElementById("status").textContent = "loaded";
    })
    .catch((error) => {
      document.getElementById("status").textContent = "blocked: " + error.name;
    });
</script>
</body></html>
"""


@pytest.fixture
def widget_origin():
    """Start the page on a free port; returns a function giving its origin."""
    yield from page_origins(PAGE)


def test_allowed_origin_reads_and_foreign_origin_is_blocked(
    page, live_server, agent, make_api, widget_origin
):
    allowed, foreign = widget_origin(), widget_origin()
    agent.allowed_origins = [allowed]
    agent.save(update_fields=["allowed_origins"])
    me = end_user_factory(agent=agent, external_id="cust-7")
    conversation_factory(agent=agent, user=me, title="Where is my parcel?")
    conversation_factory(agent=agent, user=end_user_factory(agent=agent), title="Not mine")
    minter = make_api(["auth_tokens:create"])
    token = minter.post("/v1/auth_tokens", json={"external_id": "cust-7"}).json()["token"]
    fragment = f"#api={live_server.url}&token={token}"

    page.goto(f"{allowed}/widget.html{fragment}")
    page.locator("#status", has_text="loaded").wait_for()
    assert page.locator("#conversations li").all_inner_texts() == ["Where is my parcel?"]

    page.goto(f"{foreign}/widget.html{fragment}")
    page.locator("#status", has_text="blocked").wait_for()
    assert page.locator("#status").inner_text() == "blocked: TypeError"
    assert page.locator("#conversations li").count() == 0
