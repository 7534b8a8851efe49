"""Every sortable console list (issue 26, item 5): each column, both ways, keyset-paged through
ties and missing values, each order read from its own index, and each cursor bound to its order.

One table of lists drives every test: the rows a list holds, and for each column the value a
row sorts by, computed here in Python from the row (not from the query under test).
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.urls import reverse

from apps.activity import selectors as activity
from apps.common.errors import BadRequest
from apps.common.keyset import PageRequest, cursor_decode, paginate
from apps.common.sorting import ListSorts
from apps.knowledge import selectors as knowledge
from apps.knowledge.models import KnowledgeDocument
from apps.webhooks import selectors as webhooks
from tests.activity.factories import conversation_factory, end_user_factory, run_factory
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _users(agent):
    names = ["bravo", "Alpha", None, "charlie", "alpha", None, "Delta", "bravo"]
    emails = ["kim@x", None, "Ann@x", "kim@x", None, "bo@x", "ann@x", "zed@x"]
    identities = ["user", "anonymous", "user", "preview", "unknown", "user", "anonymous", "user"]
    for n, name in enumerate(names):
        end_user_factory(
            agent=agent,
            display_name=name,
            email=emails[n],
            external_id=None if n % 3 == 0 else f"e{(n * 5) % 8}",
            identity_type=identities[n],
            first_seen_at=T0 + timedelta(hours=(n * 5) % 7),
            last_seen_at=T0 + timedelta(days=1, hours=(n * 3) % 4),
        )
    return activity.user_list(agent=agent)


def _documents(agent):
    rows = [
        ("Zeta.md", 300, "ready"),
        ("alpha.pdf", None, "failed"),
        ("Beta.txt", 300, "processing"),
        ("gamma.md", 40, "ready"),
        ("beta.txt", None, "ready"),
        ("Eta.docx", 9000, "failed"),
        ("delta", 40, "ready"),
    ]
    for n, (name, size, status) in enumerate(rows):
        document = KnowledgeDocument.objects.create(
            agent=agent,
            name=name,
            source_type="file" if size is not None else "url",
            source_url=None if size is not None else f"https://example.com/{n}",
            file_size_bytes=size,
            status=status,
        )
        KnowledgeDocument.objects.filter(pk=document.pk).update(
            created_at=T0 + timedelta(minutes=(n * 4) % 5),
            updated_at=T0 + timedelta(hours=1, minutes=(n * 2) % 3),
        )
    return knowledge.document_queryset(agent=agent)


def _deliveries(agent):
    webhook = webhook_factory(agent=agent)
    statuses = ["failed", "succeeded", "pending", "failed", "paused", "succeeded", "failed"]
    for n, status in enumerate(statuses):
        delivery_factory(
            webhook=webhook,
            status=status,
            attempts=(n * 3) % 4,
            next_attempt_at=None,
            created_at=T0 + timedelta(minutes=(n * 2) % 3),
        )
    return webhooks.delivery_list(agent=agent)


def _runs(agent):
    conversation = conversation_factory(agent=agent)
    statuses = ["completed", "failed", "streaming", "completed", "aborted", "failed", "completed"]
    models = ["gpt", None, "claude", "gpt", "llama", "claude", None]
    for n, tokens in enumerate([500, None, 100, 100, 900, None, 50]):
        run_factory(
            conversation=conversation,
            status=statuses[n],
            model_id=models[n],
            total_tokens=tokens,
            credits_charged=None if tokens is None else tokens / 100,
            total_turn_latency_ms=None if tokens is None else float(n % 3),
            created_at=T0 + timedelta(seconds=n % 4),
        )
    return activity.run_list(agent=agent)


def _conversations(agent):
    titles = ["Refunds", None, "billing", "Refunds", "alpha", None, "Zebra"]
    statuses = ["completed", None, "failed", "completed", "streaming", "failed", None]
    sources = ["embed", "preview", None, "embed", None, "preview", "embed"]
    for n in range(7):
        conversation_factory(
            agent=agent,
            title=titles[n],
            status=statuses[n],
            source=sources[n],
            created_at=T0 + timedelta(minutes=n % 3),
            updated_at=T0 + timedelta(hours=1, minutes=(n * 2) % 5),
        )
    return activity.conversation_list(agent=agent, filters={})


def _size(document):
    return -1 if document.file_size_bytes is None else document.file_size_bytes


def _missing(value, missing):
    return missing if value is None else value


# list -> (its sorts, its rows, {column: the value a row sorts by})
LISTS = {
    "users": (
        activity.USER_SORTS,
        _users,
        {
            "last_seen": lambda u: u.last_seen_at,
            "first_seen": lambda u: u.first_seen_at,
            "name": lambda u: (u.display_name or u.id).lower(),
            "email": lambda u: (u.email or "").lower(),
            "external_id": lambda u: u.external_id or "",
            "identity": lambda u: u.identity_type,
        },
    ),
    "knowledge": (
        knowledge.DOCUMENT_SORTS,
        _documents,
        {
            "created": lambda d: d.created_at,
            "name": lambda d: d.name.lower(),
            "size": _size,
            "status": lambda d: d.status,
            "updated": lambda d: d.updated_at,
        },
    ),
    "deliveries": (
        webhooks.DELIVERY_SORTS,
        _deliveries,
        {
            "created": lambda d: d.created_at,
            "status": lambda d: d.status,
            "attempts": lambda d: d.attempts,
        },
    ),
    "runs": (
        activity.RUN_SORTS,
        _runs,
        {
            "created": lambda r: r.created_at,
            "tokens": lambda r: _missing(r.total_tokens, -1),
            "credits": lambda r: _missing(r.credits_charged, -1),
            "latency": lambda r: _missing(r.total_turn_latency_ms, -1),
            "status": lambda r: (r.status, r.created_at),  # newest first within a status
            "model": lambda r: r.model_id or "",
        },
    ),
    "conversations": (
        activity.CONVERSATION_SORTS,
        _conversations,
        {
            "updated": lambda c: c.updated_at,
            "created": lambda c: c.created_at,
            "title": lambda c: (c.title or "").lower(),
            "status": lambda c: c.status or "",
            "source": lambda c: c.source or "",
        },
    ),
}
CASES = [
    (name, column, direction)
    for name, (sorts, _rows, values) in LISTS.items()
    for column in values
    for direction in ("asc", "desc")
]


def test_the_table_names_every_sortable_column():
    for sorts, _rows, values in LISTS.values():
        assert set(sorts.names) == set(values)


def _walk(sorts: ListSorts, queryset, column: str, direction: str) -> list:
    ordered, keyset = sorts.apply(queryset, sorts.choose({"sort": column, "dir": direction}))
    rows, cursor = [], None
    while True:
        page = paginate(ordered, keyset=keyset, page=PageRequest(limit=3, after=cursor))
        rows += page.rows
        if not page.has_more:
            return rows
        cursor = page.next_cursor


@pytest.mark.parametrize(("name", "column", "direction"), CASES)
def test_every_row_once_in_the_chosen_order(agent, name, column, direction):
    sorts, rows, values = LISTS[name]
    queryset = rows(agent)
    walked = _walk(sorts, queryset, column, direction)
    expected = sorted(queryset, key=lambda row: (values[column](row), row.id))
    if direction == "desc":
        expected.reverse()
    assert [row.id for row in walked] == [row.id for row in expected]


@pytest.mark.parametrize(("name", "column", "direction"), CASES)
def test_newer_pages_walk_back_over_the_same_rows(agent, name, column, direction):
    """The console's "Newer" link (a `before` cursor, read backwards on the same index) goes
    back over exactly the rows the forward walk went through, in every order."""
    sorts, rows, _values = LISTS[name]
    queryset = rows(agent)
    ordered, keyset = sorts.apply(queryset, sorts.choose({"sort": column, "dir": direction}))
    forward = _walk(sorts, queryset, column, direction)
    page = paginate(ordered, keyset=keyset, page=PageRequest(limit=3, after=None))
    while page.has_more:
        page = paginate(ordered, keyset=keyset, page=PageRequest(limit=3, after=page.next_cursor))
    walked_back = list(page.rows)
    for _page in range(len(forward)):  # bounded: a wrong cursor may lead round in circles
        if not page.previous_cursor:
            break
        before = PageRequest(limit=3, after=None, before=page.previous_cursor)
        page = paginate(ordered, keyset=keyset, page=before)
        walked_back = page.rows + walked_back
    assert [row.id for row in walked_back] == [row.id for row in forward]


def _plan(queryset) -> str:
    with connection.cursor() as cursor:
        # A few rows make any plan cheap: with scans and sorts discouraged, only an index that
        # yields the order avoids a Sort node.
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        try:
            sql, params = queryset.query.sql_with_params()
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET enable_sort")
            cursor.execute("RESET enable_seqscan")


@pytest.mark.parametrize(("name", "column", "direction"), CASES)
def test_every_order_is_read_from_an_index_without_sorting(agent, name, column, direction):
    if connection.vendor != "postgresql":
        pytest.skip("plans are PostgreSQL's")
    sorts, rows, _values = LISTS[name]
    queryset = rows(agent)
    ordered, keyset = sorts.apply(queryset, sorts.choose({"sort": column, "dir": direction}))
    first = paginate(ordered, keyset=keyset, page=PageRequest(limit=2, after=None))
    value, row_id = cursor_decode(keyset, first.next_cursor)
    for page in (ordered, ordered.filter(keyset.after(value, row_id))):
        plan = _plan(page.order_by(*keyset.order_by)[:26])
        assert "Index" in plan and "Sort" not in plan, plan


@pytest.mark.parametrize("name", LISTS)
def test_a_cursor_of_one_order_is_refused_by_another(agent, name):
    sorts, rows, values = LISTS[name]
    queryset = rows(agent)
    first, second = list(values)[:2]
    by_first = sorts.apply(queryset, sorts.choose({"sort": first, "dir": "asc"}))
    page = paginate(by_first[0], keyset=by_first[1], page=PageRequest(limit=2, after=None))
    for other in (
        sorts.choose({"sort": second, "dir": "asc"}),
        sorts.choose({"sort": first, "dir": "desc"}),
    ):
        with pytest.raises(BadRequest):
            cursor_decode(sorts.keyset(other), page.next_cursor)


def test_an_unknown_column_or_direction_is_the_default_order():
    sorts = knowledge.DOCUMENT_SORTS
    assert sorts.keyset(sorts.choose({"sort": "nonsense", "dir": "sideways"})) is sorts.default
    # A text column's first click sorts A to Z; a time's, newest first.
    assert sorts.choose({"sort": "name"}).descending is False
    assert sorts.choose({"sort": "updated"}).descending is True


PAGES = {
    "users": ("activity:user_list", "user-table"),
    "knowledge": ("knowledge:document_list", "document-table"),
    "deliveries": ("webhooks:webhook_detail", "delivery-table"),
    "runs": ("activity:run_list", "run-table"),
    "conversations": ("activity:conversation_list", "conversation-table"),
}


@pytest.mark.parametrize("name", PAGES)
def test_the_page_headers_say_the_order_and_turn_it_around(client, owner, agent, name):
    sorts, rows, values = LISTS[name]
    rows(agent)
    client.force_login(owner)
    url = reverse(PAGES[name][0])
    column = list(values)[1]
    html = client.get(url, {"sort": column, "dir": "asc"}).content.decode()
    header = _header(html, column)
    assert 'aria-sort="ascending"' in header and f"sort={column}&amp;dir=desc" in header
    # Every other sortable column is offered, unsorted, in its first direction.
    for other in sorts.columns:
        if other.name != column:
            other_header = _header(html, other.name)
            assert 'aria-sort="none"' in other_header
            assert f"sort={other.name}&amp;dir={other.first_direction}" in other_header


def _header(html: str, column: str) -> str:
    import re

    match = re.search(rf'<th[^>]*data-sort="{column}"[^>]*>.*?</th>', html, re.S)
    assert match is not None, f"no header for {column}"
    return match.group(0)
