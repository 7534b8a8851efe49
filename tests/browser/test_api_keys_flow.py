"""A person signs in, creates a key, sees it once, and revokes it."""

import re

import pytest

from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_see_once_and_revoke_a_key(console_page):
    page = console_page
    page.goto(f"{page.live_server_url}/api-keys/")
    page.fill("#id_name", "Browser key")
    page.check("input[value='runs:read']")
    page.check("input[value='knowledge:write']")
    page.click("#api-key-create-form button[type=submit]")
    secret = page.locator("#new-key-secret").inner_text().strip()
    assert re.fullmatch(r"ack_[0-9a-f]{12}[A-Za-z0-9_-]{43}", secret)
    assert ApiClient(secret).get("/v1/connection").status == 200

    page.reload()
    assert page.locator("#new-key-secret").count() == 0
    assert secret not in page.content()

    row = page.locator("#api-key-table tbody tr", has_text="Browser key")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    page.locator("#api-key-table tbody tr", has_text="Browser key").get_by_text(
        "Revoked"
    ).wait_for()
    assert ApiClient(secret).get("/v1/connection").status == 401


def test_create_an_expiring_key_and_see_its_expiry(console_page):
    from apps.workspaces.models import ApiKey

    page = console_page
    page.goto(f"{page.live_server_url}/api-keys/")
    page.fill("#id_name", "Week-long key")
    page.check("input[value='runs:read']")
    page.select_option("#id_expires", "7")
    page.click("#api-key-create-form button[type=submit]")
    secret = page.locator("#new-key-secret").inner_text().strip()
    row = page.locator("#api-key-table tbody tr", has_text="Week-long key")
    assert row.locator("td.expires").inner_text().replace("\xa0", " ").startswith("in 6 days")
    assert row.locator(".badge-expired").count() == 0
    assert ApiClient(secret).get("/v1/connection").json()["credential"]["expires_at"]
    assert ApiKey.objects.get(name="Week-long key").expires_at is not None
