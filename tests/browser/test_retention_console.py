"""An owner chooses how long the workspace keeps its activity; a member has no such page."""

import pytest

from apps.retention.models import RetentionPolicy
from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_sets_the_retention_period(console_page, agent):
    page = console_page
    page.goto(f"{page.live_server_url}/overview/")
    page.click("nav.nav >> text=Data retention")
    assert "kept forever" in page.locator("#retention-current").inner_text()
    page.select_option("#id_activity", "90")
    page.click("#save-retention")
    page.get_by_text("Activity is now kept 90 days.").wait_for()
    assert "kept 90 days" in page.locator("#retention-current").inner_text()
    assert RetentionPolicy.objects.get(workspace_id=agent.workspace_id).activity_days == 90
    page.select_option("#id_activity", "forever")
    page.click("#save-retention")
    page.get_by_text("Activity is now kept forever.").wait_for()
    assert RetentionPolicy.objects.get(workspace_id=agent.workspace_id).activity_days is None


def test_a_member_has_no_retention_page(page, live_server, member, agent):
    log_in(page, live_server, member)
    page.goto(f"{live_server.url}/overview/")
    assert page.locator("nav.nav >> text=Data retention").count() == 0
    response = page.goto(f"{live_server.url}/retention/")
    assert response is not None and response.status == 403
