"""Two dispatchers on their own database connections never send a delivery twice."""

import threading

import pytest
from django.db import connection

from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from apps.webhooks.services import deliveries_dispatch_due
from tests.webhooks.conftest import received
from tests.webhooks.factories import delivery_factory, webhook_factory


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_dispatchers_send_each_of_20_deliveries_exactly_once(agent, receiver):
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED needs PostgreSQL")
    webhook = webhook_factory(agent=agent, url=receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_data("ok")
    ids = {delivery_factory(webhook=webhook).pk for _ in range(20)}
    barrier = threading.Barrier(2)
    results, errors = [], []

    def dispatcher():
        from django.db import connections

        try:
            barrier.wait()
            results.append(deliveries_dispatch_due())
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=dispatcher) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert sum(result["sent"] for result in results) == 20
    requests = received(receiver)
    assert sorted(request.headers["webhook-id"] for request in requests) == sorted(ids)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    assert WebhookAttempt.objects.count() == 20
