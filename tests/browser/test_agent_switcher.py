"""The Agent switcher in Chromium (issue 26, item 7): arrow keys only move the choice; Enter or
a pick with the mouse switches; the next sign-in opens the Agent chosen last."""

import pytest

from tests.browser.conftest import sign_in

pytestmark = pytest.mark.django_db(transaction=True)


def _current(page) -> str:
    return page.locator("#agent-switcher-select").get_attribute("data-current")


def test_arrow_keys_do_not_switch_enter_does(page, live_server, owner, agent, sibling_agent):
    sign_in(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/")
    assert _current(page) == sibling_agent.pk  # "Sales Agent" sorts before "Support Agent"
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    page.focus("#agent-switcher-select")
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(500)
    assert navigations == []
    assert _current(page) == sibling_agent.pk
    assert page.locator("#agent-switch-button").is_visible()
    page.keyboard.press("ArrowUp")
    page.wait_for_timeout(300)
    assert navigations == [] and not page.locator("#agent-switch-button").is_visible()

    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        f"document.querySelector('#agent-switcher-select').dataset.current === '{agent.pk}'"
    )
    assert page.url == f"{live_server.url}/runs/"  # stays on the page, now for the new Agent


def test_a_mouse_pick_switches_and_the_next_sign_in_remembers(
    browser, page, live_server, owner, agent, sibling_agent
):
    sign_in(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/")
    page.select_option("#agent-switcher-select", agent.pk)
    page.wait_for_function(
        f"document.querySelector('#agent-switcher-select').dataset.current === '{agent.pk}'"
    )

    page.click("form[action='/logout/'] button")
    page.wait_for_load_state("networkidle")
    fresh = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    try:
        sign_in(fresh, live_server, owner)
        assert _current(fresh) == agent.pk
    finally:
        fresh.context.close()
