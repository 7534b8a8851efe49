"""Playwright driving Debian's Chromium (no browser download) against a live server.

`console_page` is a page already signed in as the workspace owner. Browser tests run on the
same worker (xdist group "browser") so two Chromiums do not fight for the 2 cores.

Two ways in: `sign_in` fills the login form, for the tests whose subject is signing in (and
`test_agent_switcher`, which signs in through the form as any person does); `log_in` hands the
browser a session made server-side, as Django's test client's `force_login` does, for every
test whose subject comes after: no login page, no redirect to the Overview (whose charts are
the slowest page to draw), no half a second of network quiet waited for.
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


# The page has loaded and htmx is neither waiting for an answer nor swapping or settling one (it
# readies the new rows' own hx- links while settling); requests that `hx-trigger="load"`
# starts are under way by the time the document is complete.
HTMX_IDLE = """() => document.readyState === 'complete'
  && !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"""


def settle(page) -> None:
    """Wait until the page is loaded and its htmx requests are answered and swapped in: what a
    test that reads the page next needs, without "networkidle"'s half second of quiet at least.
    Keep "networkidle" where the test proves that nothing more is requested."""
    page.wait_for_function(HTMX_IDLE)


def sign_in(page, live_server, user) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.email)
    page.fill("#id_password", user.raw_password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


def log_in(page, live_server, user, agent=None) -> None:
    """Sign `page`'s browser context in as `user` with a real session made server-side: a
    session row in the database (Django's `login()`, through the test client's `force_login`)
    and its cookie in the context, for the live server's host. With `agent`, the session's
    current Agent is set (as `console_client` does); without, the first page opened picks it
    as after the login form. That page also sets the CSRF cookie."""
    from django.conf import settings
    from django.test import Client

    from tests.conftest import console_client

    if agent is None:
        client = Client()
        client.force_login(user)
    else:
        client = console_client(user, agent)
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
                "httpOnly": settings.SESSION_COOKIE_HTTPONLY,
                "sameSite": settings.SESSION_COOKIE_SAMESITE,
            }
        ]
    )


@pytest.fixture
def console_page(page, live_server, owner, agent):
    """A page signed in as the owner of `agent`'s workspace, with `agent` as the current Agent
    (the only one when it signed in through the form and first opened a page: a test's later
    Agents, which may sort before it, do not take its place)."""
    log_in(page, live_server, owner, agent)
    page.live_server_url = live_server.url
    return page
