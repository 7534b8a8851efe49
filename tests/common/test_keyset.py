"""The keyset paginator every list uses: limits, cursors, and complete walks."""

import threading

import pytest
from django.db import connection
from django.http import QueryDict

from apps.common.errors import BadRequest
from apps.common.keyset import Keyset, page_request, paginate
from apps.workspaces.models import ApiKey
from tests.factories import api_key_factory

KEYS = Keyset(name="test-keys", field="created_at", descending=True)


def params(query: str) -> QueryDict:
    return QueryDict(query)


@pytest.mark.smoke
@pytest.mark.parametrize("raw", ["0", "101", "-1", "abc", "1.5", "", " 5", "२"])
def test_limit_outside_1_to_100_is_bad_request(raw):
    with pytest.raises(BadRequest):
        page_request(params(f"limit={raw}"))


@pytest.mark.smoke
def test_limit_defaults_to_20_and_accepts_bounds():
    assert page_request(params("")).limit == 20
    assert page_request(params("limit=1")).limit == 1
    assert page_request(params("limit=100")).limit == 100


@pytest.mark.django_db
def test_tampered_or_foreign_cursor_is_bad_request(agent):
    for _ in range(3):
        api_key_factory(agent=agent, scopes=["users:read"])
    first = paginate(
        ApiKey.objects.filter(agent=agent), keyset=KEYS, page=page_request(params("limit=1"))
    )
    assert first.has_more and first.next_cursor
    tampered = first.next_cursor[:-2] + ("AA" if not first.next_cursor.endswith("AA") else "BB")
    for bad in (tampered, "not-a-cursor", first.rows[0].pk):
        with pytest.raises(BadRequest):
            paginate(ApiKey.objects.all(), keyset=KEYS, page=page_request(params(f"after={bad}")))
    other_list = Keyset(name="other-list", field="created_at", descending=True)
    with pytest.raises(BadRequest):
        paginate(
            ApiKey.objects.all(),
            keyset=other_list,
            page=page_request(params(f"after={first.next_cursor}")),
        )


@pytest.mark.django_db(transaction=True)
def test_walk_returns_every_row_once_while_rows_are_inserted(agent):
    """Rows with equal sort keys (ties) and concurrent inserts do not break the walk."""
    from django.utils import timezone

    same_instant = timezone.now()
    created = []
    for i in range(250):
        key, _ = api_key_factory(agent=agent, scopes=["users:read"], name=f"k{i}")
        created.append(key.pk)
    # A third of the rows share one timestamp, so only the id breaks their ties.
    ApiKey.objects.filter(pk__in=created[:80]).update(created_at=same_instant)

    stop = threading.Event()

    def insert_newer_rows():
        try:
            while not stop.is_set():
                api_key_factory(agent=agent, scopes=["users:read"], name="late")
        finally:
            connection.close()

    inserter = threading.Thread(target=insert_newer_rows)
    inserter.start()
    seen: list[str] = []
    after = None
    try:
        while True:
            query = "limit=7" + (f"&after={after}" if after else "")
            page = paginate(
                ApiKey.objects.filter(agent=agent), keyset=KEYS, page=page_request(params(query))
            )
            seen.extend(row.pk for row in page.rows)
            if not page.has_more:
                assert page.next_cursor is None
                break
            after = page.next_cursor
    finally:
        stop.set()
        inserter.join()
    assert len(seen) == len(set(seen)), "a row was returned twice"
    assert set(created) <= set(seen), "a row that existed when the walk began was skipped"
