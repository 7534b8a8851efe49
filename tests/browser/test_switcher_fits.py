"""The Agent switcher shows its whole choice at 1440 px (issue 38, defect 6)."""

import pytest

from tests.browser.conftest import log_in
from tests.factories import agent_factory, workspace_factory

pytestmark = pytest.mark.django_db(transaction=True)

# The width the selected option's text needs, against the room the select gives it (its
# inner width less the arrow).
FITS = """() => {
  const select = document.querySelector('#agent-switcher-select');
  const text = select.options[select.selectedIndex].text;
  const probe = document.createElement('span');
  const style = getComputedStyle(select);
  probe.style.font = style.font;
  probe.style.whiteSpace = 'pre';
  probe.style.position = 'absolute';
  probe.textContent = text;
  document.body.appendChild(probe);
  const needed = probe.getBoundingClientRect().width;
  probe.remove();
  const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
  return {text, needed, room};
}"""


def test_the_switcher_is_not_cut_off(page, live_server, owner):
    workspace = workspace_factory(name="Demo workspace", owner=owner)
    agent_factory(workspace=workspace, name="Support Agent")
    agent_factory(workspace=workspace, name="Returns desk")
    page.set_viewport_size({"width": 1440, "height": 900})
    log_in(page, live_server, owner)
    for path in ("/overview/", "/runs/", "/api-keys/"):
        page.goto(f"{live_server.url}{path}")
        fit = page.evaluate(FITS)
        assert fit["needed"] <= fit["room"], fit
        # Which workspace the Agent belongs to is still said, in full.
        box = page.locator("#switcher-workspace")
        assert box.inner_text() == "Demo workspace"
        assert box.evaluate("e => e.scrollWidth <= e.clientWidth")
