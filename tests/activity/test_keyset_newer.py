"""Console "Newer" pages: a backwards keyset walk returns exactly the pages of the forward walk."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from apps.activity import selectors
from apps.common.keyset import PageRequest, paginate
from tests.activity.factories import conversation_factory, run_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def test_walking_back_with_before_retraces_every_page_even_through_ties(agent):
    conversation = conversation_factory(agent=agent)
    for n in range(23):
        # Groups of three share a timestamp: the id breaks the ties.
        run_factory(conversation=conversation, created_at=T0 + timedelta(seconds=n // 3))
    runs = selectors.run_list(agent=agent)

    forward, cursor = [], None
    while True:
        page = paginate(runs, keyset=selectors.RUN_KEYSET, page=PageRequest(limit=5, after=cursor))
        forward.append(page)
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert forward[0].previous_cursor is None
    assert sum(len(page.rows) for page in forward) == 23

    backward = [forward[-1]]
    while backward[-1].previous_cursor:
        backward.append(
            paginate(
                runs,
                keyset=selectors.RUN_KEYSET,
                page=PageRequest(limit=5, after=None, before=backward[-1].previous_cursor),
            )
        )
    assert [[r.id for r in p.rows] for p in reversed(backward)] == [
        [r.id for r in p.rows] for p in forward
    ]


def test_a_tampered_before_cursor_shows_the_first_page_with_a_message(client, owner, agent):
    conversation = conversation_factory(agent=agent)
    run_factory(conversation=conversation)
    client.force_login(owner)
    response = client.get(reverse("activity:run_list") + "?before=not-a-cursor")
    assert response.status_code == 200
    assert "That page link is no longer valid; showing the first page." in response.content.decode()
