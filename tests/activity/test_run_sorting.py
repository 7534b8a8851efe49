"""The Runs page sorts by tokens, credits or latency, both ways, keyset-paged through ties and
missing values."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.urls import reverse

from apps.activity import selectors
from apps.common.keyset import PageRequest, paginate
from tests.activity.factories import conversation_factory, run_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


@pytest.fixture
def runs(agent):
    conversation = conversation_factory(agent=agent)
    tokens = [500, 100, None, 100, 900, None, 300, 100, 700, 50, 100, 300]
    return [
        run_factory(
            conversation=conversation, total_tokens=value, created_at=T0 + timedelta(seconds=n)
        )  # fmt: skip
        for n, value in enumerate(tokens)
    ]


def _walk(agent, *, sort: str, descending: bool, limit: int = 5) -> list:
    queryset, keyset = selectors.run_list_sorted(
        selectors.run_list(agent=agent), sort=sort, descending=descending
    )
    rows, cursor = [], None
    while True:
        page = paginate(queryset, keyset=keyset, page=PageRequest(limit=limit, after=cursor))
        rows += page.rows
        if not page.has_more:
            return rows
        cursor = page.next_cursor


@pytest.mark.parametrize("descending", [True, False])
def test_every_run_once_in_token_order_with_missing_values_last_when_biggest_first(
    agent, runs, descending
):
    walked = _walk(agent, sort="tokens", descending=descending)
    assert sorted(r.id for r in walked) == sorted(r.id for r in runs)  # none lost, none twice
    keys = [(-1 if r.total_tokens is None else r.total_tokens, r.id) for r in walked]
    assert keys == sorted(keys, reverse=descending)
    if descending:
        assert [r.total_tokens for r in walked[-2:]] == [None, None]


def test_the_sort_uses_its_index_on_postgresql(agent, runs):
    if connection.vendor != "postgresql":
        pytest.skip("plans are PostgreSQL's")
    queryset, keyset = selectors.run_list_sorted(
        selectors.run_list(agent=agent), sort="tokens", descending=True
    )
    # A dozen rows make any plan cheap, and the table's statistics are whatever the tests before
    # left: with scans and sorts both discouraged, only an index that yields the order avoids
    # a Sort, so the plan depends on the index and the expression, not on the statistics.
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        sql, params = queryset.order_by(*keyset.order_by)[:25].query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_sort")
        cursor.execute("RESET enable_seqscan")
    assert "run_agent_tokens" in plan and "Sort" not in plan.split("run_agent_tokens")[0]


def test_runs_page_headers_sort_and_turn_around(client, owner, agent, runs):
    client.force_login(owner)
    html = client.get(reverse("activity:run_list"), {"sort": "tokens"}).content.decode()
    assert 'aria-sort="descending" data-sort="tokens"' in html
    table = html.split('id="run-table"', 1)[1]
    first = re.search(r'<td data-label="Tokens" class="num">(\d+)</td>', table)
    assert first is not None and first.group(1) == "900"
    # Clicking the current column turns the order around.
    assert "sort=tokens&amp;dir=asc" in html
    html = client.get(reverse("activity:run_list"), {"sort": "tokens", "dir": "asc"}).content
    assert b'aria-sort="ascending" data-sort="tokens"' in html
    # An unknown column is the default order, not an error.
    response = client.get(reverse("activity:run_list"), {"sort": "nonsense"})
    assert response.status_code == 200 and b'aria-sort="descending" data-sort="created"' in (
        response.content
    )
