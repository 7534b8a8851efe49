"""Smaller console fixes of issue 26, item 9, in Chromium: a skip link as the first Tab, Escape
closes the phone menu, and file and source parts carry icons shipped with the page (no emoji
font needed)."""

import pytest

from tests.activity.factories import conversation_factory, message_factory

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_first_tab_is_a_skip_link_to_the_content(console_page):
    page = console_page
    page.goto(f"{page.live_server_url}/runs/")
    skip = page.locator("#skip-link")
    assert not skip.is_visible() or skip.bounding_box()["y"] < 0  # out of sight until focused

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "skip-link"
    box = skip.bounding_box()
    assert box["y"] >= 0 and box["height"] > 0  # shown while focused
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    page.keyboard.press("Tab")  # the next stop is inside the content, not the sidebar
    assert page.evaluate("document.activeElement.closest('#main') !== null")


def test_escape_closes_the_phone_menu_and_returns_focus(console_page):
    page = console_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{page.live_server_url}/runs/")
    sidebar = page.locator("#sidebar")
    assert not sidebar.is_visible()

    page.click("#menu-button")
    assert sidebar.is_visible()
    page.focus("#sidebar .nav-link >> nth=1")
    page.keyboard.press("Escape")

    assert not sidebar.is_visible()
    assert page.locator("#menu-button").get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.id") == "menu-button"


def test_file_and_source_parts_have_svg_icons_not_emoji(console_page, agent):
    page = console_page
    conversation = conversation_factory(agent=agent, title="With attachments")
    message_factory(
        conversation=conversation,
        parts=[
            {"type": "file", "url": "https://example.com/a.pdf", "filename": "a.pdf"},
            {"type": "source-url", "url": "https://example.com/doc", "title": "The doc"},
        ],
    )
    page.goto(f"{page.live_server_url}/conversations/{conversation.id}/")

    html = page.content()
    assert "📎" not in html and "🔗" not in html
    for part in (".part-file", ".part-source"):
        icon = page.locator(f"{part} svg.icon")
        box = icon.bounding_box()
        assert box and box["width"] >= 10 and box["height"] >= 10
        # The symbol it uses ships in the page itself.
        href = icon.locator("use").get_attribute("href")
        assert page.locator(f"symbol{href}").count() == 1
