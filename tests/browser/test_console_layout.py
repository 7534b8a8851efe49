"""The console's shell in Chromium: phones (390 px) get a top bar, no sideways scrolling and
no form control past its card's edge, wide tables stay inside their cards, every page can be walked with Tab, a file can be uploaded
with the keyboard alone, and nothing loads images from addresses end users chose."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.activity.demo import activity_seed_demo
from tests.activity.factories import conversation_factory, end_user_factory, message_factory
from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)

CONSOLE_PAGES = [
    "/overview/",
    "/conversations/",
    "/users/",
    "/runs/",
    "/knowledge/",
    "/webhooks/",
    "/api-keys/",
    "/agents/",
    "/usage/",
    "/tools/",
]
# A port nothing listens on: a request there would only show up in the browser's request log.
TRACKER = "http://127.0.0.1:9"


@pytest.fixture
def seeded(agent):
    activity_seed_demo(agent=agent)
    user = end_user_factory(
        agent=agent, display_name="Ada Lovelace", avatar_url=f"{TRACKER}/avatar.png"
    )
    conversation = conversation_factory(agent=agent, title="Pixel check", user=user)
    message_factory(
        conversation=conversation,
        role="user",
        parts=[{"type": "text", "text": f"Look: ![pixel]({TRACKER}/pixel.png)"}],
    )
    return user, conversation


# The visible form controls (and fieldset legends) of a page that reach past their card's edge.
SPILLING_CONTROLS = """() => [...document.querySelectorAll(
    '.card input, .card select, .card textarea, .card button, .card legend')]
  .filter(el => el.offsetParent !== null || el.tagName === 'LEGEND')
  .filter(el => {
    const card = el.closest('.card').getBoundingClientRect();
    const box = el.getBoundingClientRect();
    return box.width > 0 && (box.right > card.right + 1 || box.left < card.left - 1);
  })
  .map(el => el.name || el.id || el.textContent.trim().slice(0, 30))"""


def _requests_to_tracker(page) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if TRACKER in request.url else None)
    return seen


def test_phone_width_has_a_top_bar_a_menu_and_no_sideways_scroll(
    browser, live_server, owner, agent, seeded
):
    user, conversation = seeded
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        log_in(page, live_server, owner)
        pages = [*CONSOLE_PAGES, f"/users/{user.id}/", f"/conversations/{conversation.id}/"]
        for path in pages:
            page.goto(f"{live_server.url}{path}")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{path} scrolls sideways ({width}px)"
            # Nothing is cut off inside a card either (the Tools page's header pairs were).
            assert page.evaluate(SPILLING_CONTROLS) == [], path
            expect(page.locator("#menu-button")).to_be_visible()
            expect(page.locator("#sidebar")).to_be_hidden()
            # The page title sits on the light page background, not on the dark sidebar colour.
            shell_background = page.evaluate(
                "getComputedStyle(document.querySelector('.shell')).backgroundImage"
            )
            assert shell_background == "none", path

        page.click("#menu-button")
        expect(page.locator("#sidebar")).to_be_visible()
        expect(page.locator("#menu-button")).to_have_attribute("aria-expanded", "true")
        page.get_by_role("link", name="Runs").click()
        expect(page).to_have_url(re.compile(r"/runs/$"))
        expect(page.locator("#sidebar")).to_be_hidden()
    finally:
        context.close()


def test_user_page_keeps_its_tables_inside_the_page_and_shows_initials(console_page, seeded):
    page = console_page
    user, _conversation = seeded
    tracked = _requests_to_tracker(page)
    page.goto(f"{page.live_server_url}/users/{user.id}/")

    width = page.evaluate("document.documentElement.scrollWidth")
    viewport = page.evaluate("window.innerWidth")
    assert width <= viewport
    expect(page.locator(".avatar-initials")).to_have_text("AL")
    expect(page.locator("img.avatar")).to_have_count(0)
    page.wait_for_load_state("networkidle")
    assert tracked == []


def test_remote_images_in_messages_are_links_until_the_owner_asks(console_page, seeded):
    page = console_page
    _user, conversation = seeded
    tracked = _requests_to_tracker(page)
    page.goto(f"{page.live_server_url}/conversations/{conversation.id}/")

    link = page.locator(".transcript a.remote-image")
    expect(link).to_have_attribute("href", f"{TRACKER}/pixel.png")
    expect(page.locator(".transcript img")).to_have_count(0)
    page.wait_for_load_state("networkidle")
    assert tracked == []

    page.get_by_role("link", name="Show images").click()
    expect(page.locator(".transcript img")).to_have_attribute("src", f"{TRACKER}/pixel.png")


def test_every_page_can_be_walked_with_tab(console_page, seeded):
    page = console_page
    for path in CONSOLE_PAGES:
        page.goto(f"{page.live_server_url}{path}")
        reached_main = False
        for _ in range(40):
            page.keyboard.press("Tab")
            focused = page.evaluate(
                """() => {
                    const el = document.activeElement;
                    const box = el.getBoundingClientRect();
                    return {tag: el.tagName, inMain: !!el.closest('#main'),
                            visible: box.width > 0 && box.height > 0};
                }"""
            )
            if focused["tag"] == "BODY":
                break
            assert focused["visible"], f"{path}: Tab reached an invisible {focused['tag']}"
            if focused["inMain"]:
                reached_main = True
                break
        assert reached_main, f"{path}: Tab never reached the page's content"


def test_upload_a_file_with_the_keyboard_alone(console_page, tmp_path):
    page = console_page
    notes = tmp_path / "returns.md"
    notes.write_text("# Returns\n\nItems can be returned within 30 days.\n")
    # Listening before the page loads lets Chromium hand the file dialog to the test.
    page.on("filechooser", lambda chooser: chooser.set_files(str(notes)))
    page.goto(f"{page.live_server_url}/knowledge/")

    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "upload-choose":
            break
    else:
        pytest.fail("Tab never reached the upload button")
    page.keyboard.press("Enter")

    page.locator("#upload-list .upload-item.done").wait_for()
    assert "returns.md" in page.locator("#upload-list").inner_text()


def test_every_page_loads_under_the_content_security_policy_without_console_errors(
    console_page, agent, seeded
):
    from apps.activity.models import Run
    from tests.knowledge.conftest import make_file_document

    page = console_page
    user, conversation = seeded
    run = Run.objects.filter(agent=agent).first()
    document = make_file_document(agent, b"# Hours\n\nOpen 9 to 5.\n", "hours.md")
    errors: list[str] = []
    page.on(
        "console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))

    paths = [
        *CONSOLE_PAGES,
        f"/users/{user.id}/",
        f"/conversations/{conversation.id}/",
        f"/runs/{run.id}/",
        f"/knowledge/{document.pk}/",
        "/overview/?days=7",
    ]
    for path in paths:
        response = page.goto(f"{page.live_server_url}{path}")
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
    assert errors == []
