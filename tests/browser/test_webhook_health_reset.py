"""A new webhook URL starts with no failure streak: "Failing since" belonged to the old one
(issue 38, defect 7)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.webhooks.models import Webhook
from tests.webhooks.factories import webhook_factory

pytestmark = pytest.mark.django_db(transaction=True)


def test_changing_the_url_clears_failing_since(console_page, agent, settings, httpserver):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    page = console_page
    an_hour_ago = timezone.now() - timedelta(hours=1)
    webhook_factory(
        agent=agent, url="https://old-endpoint.example.com/hook", failing_since=an_hour_ago,
        last_attempt_at=an_hour_ago, last_error="503 Service Unavailable",
        last_error_at=an_hour_ago, consecutive_failures=3,
    )  # fmt: skip
    page.goto(f"{page.live_server_url}/webhooks/")
    assert page.locator("#webhook-state").inner_text().strip() == "Failing"

    page.fill("#id_url", httpserver.url_for("/new-hook"))
    page.click("#save-config")
    page.get_by_text("Webhook settings saved.").wait_for()
    assert page.locator("#webhook-state").inner_text().strip() != "Failing"
    assert "Failing since" not in page.locator("main").inner_text()
    assert page.locator("#webhook-last-error").count() == 0
    webhook = Webhook.objects.get(agent=agent)
    assert webhook.failing_since is None and webhook.consecutive_failures == 0
    assert webhook.last_error is None
