"""An owner revokes a key, finds it in the Audit log, narrows the log to that action and
downloads it; a member has no such page."""

import csv
import io

import pytest

from tests.browser.conftest import log_in
from tests.factories import api_key_factory

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_finds_a_revocation_filters_and_exports(console_page, agent, owner):
    key, _raw = api_key_factory(agent=agent, scopes=["runs:read"], name="Nightly sync")
    page = console_page
    page.goto(f"{page.live_server_url}/api-keys/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#api-key-row-{key.pk}").get_by_role("button", name="Revoke").click()
    page.locator(f"#api-key-row-{key.pk} .badge-revoked").wait_for()

    page.click("nav.nav >> text=Audit log")
    rows = page.locator("tr.audit-row")
    revoked = rows.filter(has_text="api_key.revoked")
    revoked.wait_for()
    assert "Nightly sync" in revoked.inner_text()
    assert "Olive Owner" in revoked.inner_text()
    assert rows.count() > 1  # the key's creation, the Agent's, ...

    page.select_option("select[name=action]", "api_key.revoked")
    page.wait_for_url("**action=api_key.revoked**")
    page.wait_for_function("document.querySelectorAll('tr.audit-row').length === 1")
    assert "api_key.revoked" in rows.first.inner_text()

    with page.expect_download() as download:
        page.get_by_role("link", name="CSV").click()
    with open(download.value.path(), encoding="utf-8") as handle:
        exported = list(csv.DictReader(io.StringIO(handle.read())))
    assert [(row["action"], row["target_name"]) for row in exported] == [
        ("api_key.revoked", "Nightly sync")
    ]


def test_a_member_has_no_audit_log(page, live_server, member, agent):
    log_in(page, live_server, member)
    page.goto(f"{live_server.url}/overview/")
    assert page.locator("nav.nav >> text=Audit log").count() == 0
    response = page.goto(f"{live_server.url}/audit-log/")
    assert response is not None and response.status == 403
