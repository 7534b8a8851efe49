"""The console shell: navigation, owners and members, friendly error pages."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.smoke
def test_owner_sees_every_section(client, owner, agent):
    client.force_login(owner)
    html = client.get("/api-keys/").content.decode()
    for label in (
        "Overview",
        "Conversations",
        "Users",
        "Runs",
        "Knowledge",
        "Webhooks",
        "API keys",
    ):
        assert f">{label}</a>" in html
    assert "Owner</span>" in html


def test_member_sees_no_webhooks_entry_and_a_clear_403(client, member, agent, settings):
    settings.DEBUG = False
    client.force_login(member)
    html = client.get("/api-keys/").content.decode()
    assert ">Webhooks</a>" not in html
    assert "Member</span>" in html
    response = client.get("/webhooks/")
    assert response.status_code == 403
    assert "Owners only" in response.content.decode()


def test_unknown_console_page_is_a_styled_404(client, owner, agent, settings):
    settings.DEBUG = False
    client.force_login(owner)
    response = client.get("/conversations/conv_missing/")
    assert response.status_code == 404
    assert "Not found" in response.content.decode()
    assert "console.css" in response.content.decode()


def test_home_sends_visitors_to_sign_in_and_members_to_the_first_section(client, owner, agent):
    assert client.get("/")["Location"].startswith("/login/")
    client.force_login(owner)
    assert client.get("/")["Location"] == "/overview/"
