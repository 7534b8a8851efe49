"""The Webhooks console page: owners only, configuration, secret, test send, pause and resume,
the deliveries table with filters and pages, the attempt timeline and an in-place retry."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.webhooks.models import Webhook, WebhookDelivery
from tests.webhooks.conftest import received
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.mark.smoke
def test_page_renders_for_an_owner_and_lights_the_nav(owner_client):
    response = owner_client.get("/webhooks/")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-current="page">Webhooks<' in html
    assert "Not configured" in html
    assert "No deliveries yet" in html


def test_members_are_refused(member, agent):
    client = Client()
    client.force_login(member)

    assert client.get("/webhooks/").status_code == 403
    assert client.post("/webhooks/secret/", {"action": "reveal"}).status_code == 403


def test_anonymous_is_sent_to_login(client):
    response = client.get("/webhooks/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_saving_the_configuration(owner_client, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    response = owner_client.post(
        "/webhooks/config/",
        {"url": "http://127.0.0.1:9/hook", "events": ["run.failed"], "enabled": "on"},
    )

    assert response.status_code == 302
    webhook = Webhook.objects.get(agent=agent)
    assert (webhook.url, webhook.events, webhook.enabled) == (
        "http://127.0.0.1:9/hook",
        ["run.failed"],
        True,
    )
    assert "Webhook settings saved." in owner_client.get("/webhooks/").content.decode()


def test_a_private_url_is_a_form_error(owner_client, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = False
    response = owner_client.post("/webhooks/config/", {"url": "http://10.0.0.5/hook"})

    assert response.status_code == 400
    assert "not public" in response.content.decode()
    assert not Webhook.objects.filter(agent=agent, url__isnull=False).exists()


def test_reveal_and_rotate_the_secret_with_htmx(owner_client, agent):
    webhook = webhook_factory(agent=agent)

    revealed = owner_client.post("/webhooks/secret/", {"action": "reveal"}, headers=HTMX)
    assert webhook.secret in revealed.content.decode()
    assert "<html" not in revealed.content.decode()

    rotated = owner_client.post("/webhooks/secret/", {"action": "rotate"}, headers=HTMX)
    webhook.refresh_from_db()
    assert webhook.secret in rotated.content.decode()
    assert webhook.previous_secret is not None
    assert "previous one keeps signing" in rotated.content.decode()


def test_page_never_shows_the_secret_until_revealed(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    assert webhook.secret not in owner_client.get("/webhooks/").content.decode()


def test_send_test_shows_the_outcome(owner_client, agent, receiver):
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("ok")

    response = owner_client.post("/webhooks/test/", {"event_type": "run.aborted"}, follow=True)

    html = response.content.decode()
    assert "Test event delivered (200)." in html
    assert "run.aborted" in html
    assert len(received(receiver)) == 1


def test_pause_and_resume(owner_client, agent):
    webhook_factory(agent=agent)

    paused = owner_client.post("/webhooks/pause/", {"paused": "1"}, follow=True)
    assert "Deliveries are paused" in paused.content.decode()
    assert Webhook.objects.get(agent=agent).paused_at is not None

    resumed = owner_client.post("/webhooks/pause/", {"paused": "0"}, follow=True)
    assert "Deliveries are paused" not in resumed.content.decode()
    assert Webhook.objects.get(agent=agent).paused_at is None


def test_deliveries_table_filters_and_pages(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    now = timezone.now()
    failed = delivery_factory(
        webhook=webhook, status="failed", event_type="run.failed", created_at=now
    )
    older = [
        delivery_factory(webhook=webhook, created_at=now - timedelta(minutes=i + 1))
        for i in range(26)
    ]

    only_failed = owner_client.get(
        "/webhooks/?status=failed", headers={**HTMX, "HX-Target": "delivery-table"}
    )
    html = only_failed.content.decode()
    assert failed.pk in html and older[0].pk not in html
    assert "<html" not in html

    first_page = owner_client.get("/webhooks/").content.decode()
    assert failed.pk in first_page and older[-1].pk not in first_page
    assert 'id="older-deliveries"' in first_page


def test_attempt_timeline_fragment(owner_client, agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("nope", status=503)
    delivery = delivery_factory(webhook=webhook)
    from apps.webhooks.services import delivery_send_due

    delivery_send_due(delivery_id=delivery.pk)

    fragment = owner_client.get(f"/webhooks/deliveries/{delivery.pk}/", headers=HTMX)
    html = fragment.content.decode()
    assert "Attempt 1" in html
    assert "HTTP 503" in html
    assert "503 Service Unavailable" in html
    assert "<html" not in html
    full = owner_client.get(f"/webhooks/deliveries/{delivery.pk}/").content.decode()
    assert "<html" in full
    assert f'href="/runs/{delivery.run_id}/"' in full  # the run the event is about


def test_retry_returns_the_updated_row_with_its_timeline(owner_client, agent, receiver):
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)

    response = owner_client.post(f"/webhooks/deliveries/{delivery.pk}/retry/", headers=HTMX)

    html = response.content.decode()
    assert html.strip().startswith(f'<tbody id="delivery-row-{delivery.pk}"')
    assert 'data-status="succeeded"' in html
    assert "Attempt 1" in html


def test_retry_of_another_agents_delivery_is_not_found(owner_client, agent, sibling_agent):
    theirs = delivery_factory(webhook=webhook_factory(agent=sibling_agent))
    webhook_factory(agent=agent)

    response = owner_client.post(f"/webhooks/deliveries/{theirs.pk}/retry/", headers=HTMX)
    assert response.status_code == 404


def test_timeline_of_another_agents_delivery_is_not_found(owner_client, agent, sibling_agent):
    theirs = delivery_factory(webhook=webhook_factory(agent=sibling_agent))

    assert owner_client.get(f"/webhooks/deliveries/{theirs.pk}/").status_code == 404


def test_a_row_being_sent_polls_until_it_settles(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    delivery = delivery_factory(webhook=webhook, status="sending")
    page = owner_client.get("/webhooks/").content.decode()
    assert f'hx-get="/webhooks/deliveries/{delivery.pk}/row/"' in page
    polled = owner_client.get(
        f"/webhooks/deliveries/{delivery.pk}/row/", headers={"HX-Request": "true"}
    )
    assert polled.status_code == 200
    assert 'hx-trigger="every 3s"' in polled.content.decode()

    delivery.status = "succeeded"
    delivery.next_attempt_at = None
    delivery.save(update_fields=["status", "next_attempt_at"])
    settled = owner_client.get(
        f"/webhooks/deliveries/{delivery.pk}/row/", headers={"HX-Request": "true"}
    )
    assert settled.status_code == 286  # htmx stops polling
    assert "hx-trigger" not in settled.content.decode()
    assert "Succeeded" in settled.content.decode()


def test_a_retry_hours_away_does_not_poll(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    delivery_factory(
        webhook=webhook, status="pending", next_attempt_at=timezone.now() + timedelta(hours=2)
    )
    assert "every 3s" not in owner_client.get("/webhooks/").content.decode()


def test_an_edited_filter_or_cursor_shows_every_delivery_and_says_why(owner_client, agent):
    delivery = delivery_factory(webhook=webhook_factory(agent=agent), status="failed")

    bad_filter = owner_client.get("/webhooks/?status=exploded").content.decode()
    assert delivery.pk in bad_filter
    assert "status must be one of" in bad_filter

    bad_cursor = owner_client.get(
        "/webhooks/?after=tampered", headers={**HTMX, "HX-Target": "delivery-table"}
    ).content.decode()
    assert delivery.pk in bad_cursor and "<html" not in bad_cursor
    assert "no longer valid" in bad_cursor


def test_revealing_the_secret_first_does_not_make_an_active_webhook(owner_client, agent):
    owner_client.post("/webhooks/secret/", {"action": "reveal"})
    webhook = Webhook.objects.get(agent=agent)
    assert webhook.events == ["run.completed", "run.failed", "run.aborted"]
    assert not webhook.is_active
    assert "Not configured" in owner_client.get("/webhooks/").content.decode()


def test_saving_with_no_event_is_refused_under_the_events_field(owner_client, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    response = owner_client.post(
        "/webhooks/config/", {"url": "http://127.0.0.1:9/hook", "enabled": "on"}
    )
    assert response.status_code == 400
    assert "Subscribe to at least one event" in response.content.decode()
    assert not Webhook.objects.filter(agent=agent, enabled=True).exists()


def test_deliveries_export_streams_the_filtered_deliveries(owner_client, agent):
    import csv
    import io

    import orjson

    webhook = webhook_factory(agent=agent)
    failed = delivery_factory(webhook=webhook, status="failed", event_type="run.failed")
    delivery_factory(webhook=webhook, status="succeeded")

    response = owner_client.get("/webhooks/deliveries/export/?format=csv&status=failed")
    assert response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["id"] for row in rows] == [failed.pk]
    assert rows[0]["event_type"] == "run.failed" and rows[0]["is_test"] == "false"

    as_json = owner_client.get("/webhooks/deliveries/export/?format=json")
    data = orjson.loads(b"".join(as_json.streaming_content))
    assert len(data) == 2 and data[0]["object"] == "webhook_delivery"
    assert 'attachment; filename="webhook-deliveries-' in as_json["Content-Disposition"]


def test_deliveries_export_of_a_member_is_refused(member, agent):
    client = Client()
    client.force_login(member)
    assert client.get("/webhooks/deliveries/export/").status_code == 403


def test_export_columns_are_exactly_the_delivery_objects_fields(agent):
    from apps.webhooks.rendering import DELIVERY_COLUMNS, delivery_to_dict

    delivery = delivery_factory(webhook=webhook_factory(agent=agent))
    assert list(delivery_to_dict(delivery)) == DELIVERY_COLUMNS


def test_deliveries_page_back_with_newer(owner_client, agent):
    from datetime import timedelta

    from django.utils import timezone

    from tests.paging import assert_older_then_newer_retraces

    webhook = webhook_factory(agent=agent)
    now = timezone.now()
    for n in range(30):
        delivery_factory(webhook=webhook, created_at=now - timedelta(minutes=n))
    assert_older_then_newer_retraces(
        owner_client,
        "/webhooks/",
        older_id="older-deliveries",
        newer_id="newer-deliveries",
        row_pattern=r'id="delivery-row-(dlv_\w+)"',
    )


# --- Health, trapped owners and "retry all failed since" (issue 26, item 2) ------------------

UNRESOLVABLE = "https://hooks.example.invalid/agent"


def test_events_change_and_disable_while_the_saved_url_no_longer_resolves(owner_client, agent):
    webhook_factory(agent=agent, url=UNRESOLVABLE)

    saved = owner_client.post("/webhooks/config/", {"url": UNRESOLVABLE, "events": ["run.failed"]})
    assert saved.status_code == 302
    assert Webhook.objects.get(agent=agent).events == ["run.failed"]

    disabled = owner_client.post("/webhooks/enable/", {"enabled": "0"}, follow=True)
    html = disabled.content.decode()
    assert 'data-state="disabled"' in html and "Sending is off" in html
    assert Webhook.objects.get(agent=agent).enabled is False


def test_a_failed_save_keeps_the_saved_state_and_says_not_saved(owner_client, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = False
    webhook_factory(agent=agent)

    response = owner_client.post(
        "/webhooks/config/", {"url": "http://10.0.0.5/hook", "events": ["run.failed"]}
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert "Not saved: the webhook keeps its previous settings." in html
    assert 'data-state="healthy"' in html
    # The form has no "send events" checkbox that could disagree with the badge.
    assert 'type="checkbox" name="enabled"' not in html
    assert Webhook.objects.get(agent=agent).enabled is True


def test_save_and_start_sending_enables_a_new_webhook(owner_client, agent, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    page = owner_client.get("/webhooks/").content.decode()
    assert 'id="save-and-enable"' in page

    owner_client.post(
        "/webhooks/config/", {"url": "http://127.0.0.1:9/h", "events": ["run.failed"]}
    )
    assert Webhook.objects.get(agent=agent).enabled is False  # plain Save does not enable
    owner_client.post(
        "/webhooks/config/",
        {"url": "http://127.0.0.1:9/h", "events": ["run.failed"], "enabled": "on"},
    )
    assert Webhook.objects.get(agent=agent).enabled is True


def test_failing_webhook_shows_since_when_and_the_last_error(owner_client, agent, receiver):
    webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("down", status=503)
    from apps.webhooks.services import delivery_send_test

    delivery_send_test(agent=agent)
    html = owner_client.get("/webhooks/").content.decode()

    assert 'data-state="failing"' in html and ">Failing<" in html
    assert "Failing since" in html
    assert "The endpoint answered 503 Service Unavailable." in html


def test_no_retry_button_on_a_succeeded_delivery(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    done = delivery_factory(webhook=webhook, status="succeeded", next_attempt_at=None)
    failed = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)

    html = owner_client.get("/webhooks/").content.decode()
    assert f"/webhooks/deliveries/{failed.pk}/retry/" in html
    assert f"/webhooks/deliveries/{done.pk}/retry/" not in html
    detail = owner_client.get(f"/webhooks/deliveries/{done.pk}/").content.decode()
    assert "Retry now" not in detail


def test_recover_asks_with_the_count_then_sends_them_again(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    now = timezone.now()
    for hours in (1, 2, 30):
        delivery_factory(
            webhook=webhook,
            status="failed",
            next_attempt_at=None,
            created_at=now - timedelta(hours=hours),
        )
    since = (now - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")

    preview = owner_client.get(
        f"/webhooks/deliveries/recover/?since={since}",
        headers={**HTMX, "HX-Target": "recover-panel"},
    ).content.decode()
    assert "<html" not in preview
    assert "Send 2 failed deliveries again?" in preview
    assert 'id="recover-confirm"' in preview

    done = owner_client.post("/webhooks/deliveries/recover/", {"since": since}, follow=True)
    assert "2 failed deliveries are being sent again." in done.content.decode()
    assert WebhookDelivery.objects.filter(status="pending").count() == 2
    assert WebhookDelivery.objects.filter(status="failed").count() == 1


def test_recover_with_a_bad_time_says_why_and_changes_nothing(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)

    preview = owner_client.get("/webhooks/deliveries/recover/?since=soon").content.decode()
    assert "YYYY-MM-DD HH:MM" in preview
    posted = owner_client.post("/webhooks/deliveries/recover/", {"since": "2999-01-01T00:00"})
    assert posted.status_code == 302
    assert WebhookDelivery.objects.get().status == "failed"


def test_members_cannot_recover_or_disable(member, agent):
    client = Client()
    client.force_login(member)
    assert client.post("/webhooks/enable/", {"enabled": "0"}).status_code == 403
    assert client.get("/webhooks/deliveries/recover/?since=2026-01-01T00:00").status_code == 403


def test_bulk_retry_asks_with_the_count_of_retryable_ones_then_requeues(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    failed = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)
    later = delivery_factory(
        webhook=webhook, status="pending", next_attempt_at=timezone.now() + timedelta(hours=5)
    )
    arrived = delivery_factory(webhook=webhook, status="succeeded", next_attempt_at=None)
    ids = [failed.pk, later.pk, arrived.pk]

    asked = owner_client.post("/webhooks/deliveries/retry/", {"ids": ids}).content.decode()
    assert "Retry 2 deliveries?" in asked
    assert "1 of those ticked already arrived or are in flight" in asked
    assert arrived.pk not in asked.split('id="bulk-confirm"')[0].split("<ul")[1]

    done = owner_client.post(
        "/webhooks/deliveries/retry/", {"ids": ids, "confirm": "1"}, follow=True
    )
    assert "2 deliveries are being sent again." in done.content.decode()
    statuses = dict(WebhookDelivery.objects.values_list("pk", "status"))
    assert (statuses[failed.pk], statuses[later.pk], statuses[arrived.pk]) == (
        "pending",
        "pending",
        "succeeded",
    )
    later.refresh_from_db()
    assert later.next_attempt_at <= timezone.now()  # due now, not in five hours


def test_a_succeeded_delivery_has_no_bulk_box(owner_client, agent):
    webhook = webhook_factory(agent=agent)
    arrived = delivery_factory(webhook=webhook, status="succeeded", next_attempt_at=None)
    failed = delivery_factory(webhook=webhook, status="failed", next_attempt_at=None)
    html = owner_client.get("/webhooks/").content.decode()
    assert f'value="{failed.pk}" form="bulk-deliveries"' in html
    assert f'value="{arrived.pk}" form="bulk-deliveries"' not in html
