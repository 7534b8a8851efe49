"""axe-core on every page of the navigation at 1440 and 390 px, as an owner and as a member:
no serious or critical violation (issue 38). axe-core comes from tests/browser/node's lockfile
(scripts/install_node_packages.sh) and is injected into each page as a script."""

from pathlib import Path

import pytest

from apps.workspaces.console import navigation
from tests.activity.factories import run_factory
from tests.browser.conftest import log_in
from tests.factories import api_key_factory

pytestmark = pytest.mark.django_db(transaction=True)

AXE = Path(__file__).parent / "node" / "node_modules" / "axe-core" / "axe.min.js"
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')}`);
}"""


@pytest.mark.parametrize("width", [1440, 390])
@pytest.mark.parametrize("role", ["owner", "member"])
def test_no_serious_accessibility_violations(
    browser, live_server, agent, owner, member, role, width
):
    if not AXE.exists():
        pytest.fail("axe-core missing: bash scripts/install_node_packages.sh")
    api_key_factory(agent=agent, scopes=["runs:read"], created_by=owner, name="Owner key")
    run_factory(agent=agent)
    user = owner if role == "owner" else member
    # The pages' Content-Security-Policy refuses an injected script: bypassed for axe alone.
    context = browser.new_context(
        viewport={"width": width, "height": 900 if width > 600 else 844}, bypass_csp=True
    )
    page = context.new_page()
    log_in(page, live_server, user)

    found = {}
    for item in navigation(is_owner=role == "owner"):
        page.goto(f"{live_server.url}{item['url']}")
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate(RUN_AXE)
        if violations:
            found[item["url"]] = violations
    context.close()
    assert found == {}
