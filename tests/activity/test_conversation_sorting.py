"""The Conversations page sorts by last activity or by start, both ways, keyset-paged."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from apps.activity import selectors
from apps.common.keyset import PageRequest, paginate
from tests.activity.factories import conversation_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


@pytest.fixture
def conversations(agent):
    # Started in one order, last active in another; two share a start time (a tie on the key).
    starts = [0, 5, 5, 2, 9, 1, 7]
    updates = [50, 10, 40, 30, 20, 60, 0]
    return [
        conversation_factory(
            agent=agent,
            title=f"c{n}",
            created_at=T0 + timedelta(minutes=start),
            updated_at=T0 + timedelta(hours=1, minutes=update),
        )
        for n, (start, update) in enumerate(zip(starts, updates, strict=True))
    ]


def _walk(agent, *, sort: str, descending: bool) -> list:
    queryset, keyset = selectors.conversation_list_sorted(
        selectors.conversation_list(agent=agent, filters={}), sort=sort, descending=descending
    )
    rows, cursor = [], None
    while True:
        page = paginate(queryset, keyset=keyset, page=PageRequest(limit=3, after=cursor))
        rows += page.rows
        if not page.has_more:
            return rows
        cursor = page.next_cursor


@pytest.mark.parametrize(
    ("sort", "field"), [("", "updated_at"), ("created", "created_at"), ("bogus", "updated_at")]
)
@pytest.mark.parametrize("descending", [True, False])
def test_every_conversation_once_in_the_chosen_order(agent, conversations, sort, field, descending):
    walked = _walk(agent, sort=sort, descending=descending)
    assert sorted(c.id for c in walked) == sorted(c.id for c in conversations)
    keys = [(getattr(c, field), c.id) for c in walked]
    assert keys == sorted(keys, reverse=descending)


def test_the_page_links_turn_the_order_around(client, owner, agent, conversations):
    client.force_login(owner)
    html = client.get(reverse("activity:conversation_list"), {"sort": "created"}).content.decode()
    titles = re.findall(r">(c\d)</a>", html)
    assert titles[0] == "c4"  # started last
    header = re.search(r'<th[^>]*data-sort="created"[^>]*>.*?</th>', html, re.S).group(0)
    assert 'aria-sort="descending"' in header and "dir=asc" in header
    oldest_first = client.get(
        reverse("activity:conversation_list"), {"sort": "created", "dir": "asc"}
    ).content.decode()
    assert re.findall(r">(c\d)</a>", oldest_first)[0] == "c0"
