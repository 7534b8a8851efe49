"""Runs and conversations lists say how many rows match, counted up to a cap."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.activity import selectors
from apps.workspaces.console import BoundedCount, bounded_count
from tests.activity.factories import conversation_factory, run_factory

pytestmark = pytest.mark.django_db


def test_bounded_count_is_exact_below_the_cap_and_says_more_above(agent):
    conversation = conversation_factory(agent=agent)
    for _ in range(4):
        run_factory(conversation=conversation)
    runs = selectors.run_list(agent=agent)
    assert bounded_count(runs, cap=10) == BoundedCount(value=4, capped=False)
    assert bounded_count(runs, cap=4) == BoundedCount(value=4, capped=False)
    with CaptureQueriesContext(connection) as queries:
        assert bounded_count(runs, cap=3) == BoundedCount(value=3, capped=True)
    assert len(queries) == 1 and "LIMIT 4" in queries[0]["sql"]


def test_lists_show_their_count_with_and_without_filters(client, owner, agent):
    conversation = conversation_factory(agent=agent)
    run_factory(conversation=conversation, status="failed")
    run_factory(conversation=conversation, status="completed")
    client.force_login(owner)
    html = client.get(reverse("activity:run_list")).content.decode()
    assert 'id="list-count">2 runs</p>' in html
    html = client.get(reverse("activity:run_list"), {"status": "failed"}).content.decode()
    assert 'id="list-count">1 run matches these filters</p>' in html
    html = client.get(reverse("activity:conversation_list")).content.decode()
    assert 'id="list-count">1 conversation</p>' in html
