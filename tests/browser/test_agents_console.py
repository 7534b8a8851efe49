"""An owner creates an Agent, edits its instructions, reads the diff, restores the earlier
version in one click, then archives and restores the Agent after confirming."""

import pytest

from apps.workspaces.models import Agent, AgentRevision
from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_edit_diff_restore_archive(console_page, agent):
    page = console_page
    page.goto(f"{page.live_server_url}/agents/")
    page.get_by_role("link", name="Agents", exact=True).wait_for()
    assert page.locator(f"#agent-row-{agent.pk}").is_visible()

    page.click("#new-agent")
    page.fill("#id_name", "Billing Agent")
    page.fill("#id_instructions", "You answer invoice questions.\nBe brief.")
    page.fill("#id_model_id", "gpt-4.1-mini")
    page.select_option("#id_effort", "low")
    page.fill("#id_allowed_origins", "https://Billing.example.com/")
    page.click("#agent-create-form button[type=submit]")
    page.locator("#agent-status", has_text="Active").wait_for()
    created = Agent.objects.get(name="Billing Agent")
    assert created.allowed_origins == ["https://billing.example.com"]
    # The switcher lists the new Agent.
    assert page.locator(f"#agent-switcher-select option[value='{created.pk}']").count() == 1

    page.fill("#id_instructions", "You answer invoice questions.\nBe warm and brief.")
    page.click("#save-agent")
    page.get_by_text("Saved as revision 2.").wait_for()
    latest = page.locator("#revision-2")
    assert latest.locator(".diff-del", has_text="-Be brief.").is_visible()
    assert latest.locator(".diff-add", has_text="+Be warm and brief.").is_visible()
    page.screenshot(path="/tmp/agents-detail.png", full_page=True)

    page.locator("#revision-1").get_by_role("button", name="Restore this version").click()
    page.get_by_text("Restored revision 1").wait_for()
    assert page.input_value("#id_instructions") == "You answer invoice questions.\nBe brief."
    assert AgentRevision.objects.get(agent=created, number=3).restored_from == 1

    dialogs: list[str] = []

    def accept(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.click("#archive-agent")
    page.locator("#archived-banner").wait_for()
    assert "Nothing is deleted" in dialogs[0]
    assert page.locator("#id_instructions").is_disabled()

    page.goto(f"{page.live_server_url}/agents/?status=archived")
    page.locator(f"#agent-row-{created.pk}").wait_for()
    page.locator(f"#agent-row-{created.pk}").get_by_role("link", name="Open").click()

    page.once("dialog", accept)
    page.click("#restore-agent")
    page.locator("#agent-status", has_text="Active").wait_for()
    created.refresh_from_db()
    assert created.status == "active"


def test_dismissing_the_confirmation_archives_nothing(console_page, sibling_agent):
    page = console_page
    page.goto(f"{page.live_server_url}/agents/{sibling_agent.pk}/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#archive-agent")
    page.wait_for_load_state("networkidle")
    assert page.locator("#archived-banner").count() == 0
    sibling_agent.refresh_from_db()
    assert sibling_agent.status == "active"


def test_a_member_sees_no_archive_button(page, live_server, member, agent):
    log_in(page, live_server, member)
    page.goto(f"{live_server.url}/agents/{agent.pk}/")
    page.locator("#agent-config-form").wait_for()
    assert page.locator("#archive-agent").count() == 0
    assert page.locator("#save-agent").is_visible()
