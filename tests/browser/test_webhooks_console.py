"""An owner configures the webhook, reveals and rotates the secret, sends a test event, opens a
delivery's attempt timeline and retries a failed delivery in place."""

import pytest
from standardwebhooks.webhooks import Webhook as StandardWebhook

from apps.webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def receiver(httpserver, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    settings.WEBHOOK_READ_TIMEOUT = 2
    return httpserver


def test_configure_reveal_rotate_and_send_a_test(console_page, receiver, agent):
    page = console_page
    receiver.expect_request("/hook").respond_with_data("ok")
    page.goto(f"{page.live_server_url}/webhooks/")
    assert page.locator("#webhook-state").inner_text().strip() == "Not configured"

    page.fill("#id_url", receiver.url_for("/hook"))
    page.uncheck("input[name=events][value='run.aborted']")
    page.click("#save-and-enable")
    page.get_by_text("Webhook settings saved.").wait_for()
    assert page.locator("#webhook-state").inner_text().strip() == "Healthy"
    assert "No attempt yet" in page.locator("#webhook-health").inner_text()
    webhook = Webhook.objects.get(agent=agent)
    assert webhook.events == ["run.completed", "run.failed"]

    page.click("#reveal-secret")
    revealed = page.locator("#webhook-secret").inner_text().strip()
    assert revealed == webhook.secret
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#rotate-secret")
    page.locator("#secret-rotated").wait_for()
    rotated = page.locator("#webhook-secret").inner_text().strip()
    assert rotated != revealed and rotated.startswith("whsec_")

    page.select_option("#test-event", "run.failed")
    page.click("#send-test")
    page.get_by_text("Test event delivered (200).").wait_for()
    row = page.locator("tbody.delivery").first
    assert "run.failed" in row.inner_text()
    assert row.locator("[data-status]").get_attribute("data-status") == "succeeded"
    [(request, _response)] = receiver.log
    StandardWebhook(rotated).verify(request.get_data(), dict(request.headers))


def test_open_the_timeline_and_retry_a_failed_delivery_in_place(console_page, receiver, agent):
    from tests.webhooks.factories import webhook_factory

    page = console_page
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_ordered_request("/hook").respond_with_data(
        "down for maintenance", status=503, headers={"Retry-After": "120"}
    )
    receiver.expect_ordered_request("/hook").respond_with_data("ok")
    from apps.webhooks.services import delivery_send_test

    delivery = delivery_send_test(agent=agent, event_type="run.completed")
    assert delivery.status == "failed"

    page.goto(f"{page.live_server_url}/webhooks/")
    row = page.locator(f"#delivery-row-{delivery.pk}")
    row.locator(".delivery-toggle").click()
    timeline = row.locator(".attempt-timeline")
    timeline.wait_for()
    assert "HTTP 503" in timeline.inner_text()
    assert "503 Service Unavailable" in timeline.inner_text()
    # The answer as Svix shows it: its headers and the start of its body.
    response = timeline.locator(".attempt-response").first
    assert "Retry-After" in response.locator(".response-headers").inner_text()
    assert "120" in response.locator(".response-headers").inner_text()
    assert response.locator(".response-body").inner_text() == "down for maintenance"

    url_before = page.url
    row.get_by_role("button", name="Retry").click()
    page.locator(f"#delivery-row-{delivery.pk} [data-status='succeeded']").wait_for()
    updated = page.locator(f"#delivery-row-{delivery.pk}")
    assert "Attempt 2" in updated.locator(".attempt-timeline").inner_text()
    assert page.url == url_before  # swapped in place, no navigation
    assert WebhookDelivery.objects.get(pk=delivery.pk).attempts == 2


def test_filter_deliveries_by_status(console_page, receiver, agent):
    from tests.webhooks.factories import delivery_factory, webhook_factory

    page = console_page
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    failed = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)
    pending = delivery_factory(webhook=webhook)

    page.goto(f"{page.live_server_url}/webhooks/")
    page.locator(f"#delivery-row-{pending.pk}").wait_for()
    page.select_option("#filter-status", "failed")
    page.locator(f"#delivery-row-{pending.pk}").wait_for(state="detached")
    assert page.locator(f"#delivery-row-{failed.pk}").is_visible()
    assert "status=failed" in page.url


UNRESOLVABLE = "https://hooks.example.invalid/agent"


def test_an_owner_is_never_trapped_by_a_url_that_stopped_resolving(console_page, agent):
    """Events change and sending stops although the saved host no longer resolves; the badge
    and the form never disagree."""
    from tests.webhooks.factories import webhook_factory

    page = console_page
    webhook_factory(agent=agent, url=UNRESOLVABLE)
    page.goto(f"{page.live_server_url}/webhooks/")
    assert page.locator("#webhook-state").inner_text().strip() == "Healthy"

    page.uncheck("input[name=events][value='run.aborted']")
    page.click("#save-config")
    page.get_by_text("Webhook settings saved.").wait_for()
    assert Webhook.objects.get(agent=agent).events == ["run.completed", "run.failed"]

    page.click("#disable-button")
    page.get_by_text("Sending is off: no deliveries are recorded.").first.wait_for()
    assert page.locator("#webhook-state").inner_text().strip() == "Disabled"
    assert page.locator("#enable-button").is_visible()

    # A bad new URL is not saved, and the page says so beside the unchanged badge.
    page.fill("#id_url", "http://10.0.0.5/hook")
    page.click("#save-config")
    page.locator("#config-not-saved").wait_for()
    assert page.locator("#webhook-state").inner_text().strip() == "Disabled"
    assert Webhook.objects.get(agent=agent).url == UNRESOLVABLE


def test_failing_health_and_retry_all_failed_since_with_the_keyboard(console_page, receiver, agent):
    from datetime import timedelta

    from django.utils import timezone

    from apps.webhooks.services import delivery_send_test
    from tests.webhooks.factories import delivery_factory, webhook_factory

    page = console_page
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_ordered_request("/hook").respond_with_data(
        "down for maintenance", status=503, headers={"Retry-After": "120"}
    )
    delivery_send_test(agent=agent)
    failed = [
        delivery_factory(
            webhook=webhook,
            status="failed",
            next_attempt_at=None,
            created_at=timezone.now() - timedelta(minutes=m),
        )
        for m in (5, 10, 15)
    ]
    page.goto(f"{page.live_server_url}/webhooks/")
    assert page.locator("#webhook-state").inner_text().strip() == "Failing"
    assert "503 Service Unavailable" in page.locator("#webhook-last-error").inner_text()
    # A succeeded delivery has no Retry; a failed one has.
    assert page.locator(f"#delivery-row-{failed[0].pk} .retry-button").is_visible()

    page.focus("#recover-since")
    for _ in range(8):  # through the date and time fields to the "Retry failed..." button
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "recover-preview":
            break
    assert page.evaluate("document.activeElement.id") == "recover-preview"
    page.keyboard.press("Enter")
    question = page.locator("#recover-question")
    question.wait_for()
    assert "Send 3 failed deliveries again?" in question.inner_text()
    receiver.expect_request("/hook").respond_with_data("ok")
    page.focus("#recover-confirm")
    page.keyboard.press("Enter")
    page.get_by_text("3 failed deliveries are being sent again.").wait_for()
    assert (
        WebhookDelivery.objects.filter(pk__in=[d.pk for d in failed], status="failed").count() == 0
    )
