"""Playwright driving Debian's Chromium (no browser download) against a live server.

`console_page` is a page already signed in as the workspace owner. Browser tests run on the
same worker (xdist group "browser") so two Chromiums do not fight for the 2 cores.
"""

import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}; `make test` installs it "
            "(bash scripts/install_os_packages.sh)"
        )
    from playwright.sync_api import sync_playwright

    # Playwright's sync API refuses to run inside a running asyncio loop; Django's async
    # safety check must also be relaxed because the live server runs in this process.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def sign_in(page, live_server, user) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.email)
    page.fill("#id_password", user.raw_password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


@pytest.fixture
def console_page(page, live_server, owner, agent):
    """A page signed in as the owner of `agent`'s workspace."""
    sign_in(page, live_server, owner)
    page.live_server_url = live_server.url
    return page
