"""An export made from a sorted, filtered list holds the list's rows in the list's order (issue
26: "exports that respect filters", and sorts): for every list with an export, the test opens
the list sorted by a column other than its default and filtered, follows the page's own CSV and
JSON links, and compares the rows with the order it knows in advance. A batch boundary inside
an expression order (missing values sorting last) is crossed on purpose, so the export's keyset
continues the same order from batch to batch.
"""

import csv
import html
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from apps.activity import selectors as activity_selectors
from apps.activity.models import Run
from apps.common.export import keyset_iterate
from apps.common.sorting import sorted_list
from apps.workspaces.models import AuditEvent
from tests.activity.factories import conversation_factory, end_user_factory, run_factory
from tests.webhooks.factories import delivery_factory, webhook_factory

pytestmark = pytest.mark.django_db

ROWS = 12
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# Insertion order differs from every sorted order.
SHUFFLED = [(n * 5) % ROWS for n in range(ROWS)]
KEPT = [n for n in range(ROWS) if n % 3 != 0]  # what each list's filter keeps


@dataclass(frozen=True)
class SortedList:
    path: str
    query: str  # the sort (not the list's default) and the filter
    csv_key: str  # the CSV column the order is judged by
    json_key: object  # a function of a JSON object -> the same value, as text
    expected: list[str]  # the kept rows' keys in the sorted order


def _fill(agent) -> list[SortedList]:
    # The runs' conversation, left out by the Conversations list's filter.
    conversation = conversation_factory(
        agent=agent, title="Runs", status="failed", created_at=T0, updated_at=T0
    )
    webhook = webhook_factory(agent=agent)
    AuditEvent.objects.filter(workspace=agent.workspace).delete()
    for n in SHUFFLED:
        kept = n % 3 != 0
        run_factory(
            conversation=conversation,
            total_tokens=1000 + n,
            status="completed" if kept else "failed",
            created_at=T0 + timedelta(seconds=n),
        )
        conversation_factory(
            agent=agent,
            title=f"Chat {n:02d}",
            status="completed" if kept else "failed",
            created_at=T0 - timedelta(days=1, minutes=ROWS - n),
            updated_at=T0 + timedelta(days=1, minutes=ROWS - n),  # the reverse of created
        )
        end_user_factory(
            agent=agent,
            display_name=f"Person {n:02d}",
            identity_type="user" if kept else "anonymous",
            last_seen_at=T0 + timedelta(minutes=n),
        )
        delivery_factory(
            webhook=webhook,
            status="failed" if kept else "succeeded",
            attempts=n,
            next_attempt_at=None,
            created_at=T0 + timedelta(minutes=ROWS - n),
        )
        AuditEvent.objects.create(
            workspace=agent.workspace,
            action="api_key.revoked" if kept else "document.created",
            actor_type="user",
            actor_id=f"person{n:02d}@example.com",
            actor_name=f"Person {n:02d}",
            target_type="api_key",
            created_at=T0 + timedelta(minutes=n),
        )
    return [
        SortedList(
            "/runs/", "sort=tokens&dir=asc&status=completed", "total_tokens",
            lambda row: str(row["total_tokens"]),
            [str(1000 + n) for n in KEPT],
        ),
        SortedList(
            "/conversations/", "sort=created&dir=desc&status=completed", "title",
            lambda row: row["title"],
            [f"Chat {n:02d}" for n in reversed(KEPT)],
        ),
        SortedList(
            "/users/", "sort=name&dir=desc&identity=user", "display_name",
            lambda row: row["display_name"],
            [f"Person {n:02d}" for n in reversed(KEPT)],
        ),
        SortedList(
            "/webhooks/", "sort=attempts&dir=asc&status=failed", "attempts",
            lambda row: str(row["attempts"]),
            [str(n) for n in KEPT],
        ),
        SortedList(
            "/audit-log/", "sort=actor&dir=desc&action=api_key.revoked", "actor_name",
            lambda row: row["actor"]["name"],
            [f"Person {n:02d}" for n in reversed(KEPT)],
        ),
    ]  # fmt: skip


def _export_links(page_html: str) -> dict[str, str]:
    """The page's own export links, by format."""
    links = re.findall(r'href="([^"]*/export/\?[^"]*)"', page_html)
    return {re.search(r"format=(\w+)", link)[1]: html.unescape(link) for link in links}


def _body(response) -> bytes:
    assert response.status_code == 200, response
    return b"".join(response.streaming_content)


def test_every_export_follows_its_lists_sort_and_filters(owner_client, agent):
    for spec in _fill(agent):
        page = owner_client.get(f"{spec.path}?{spec.query}")
        assert page.status_code == 200, spec.path
        links = _export_links(page.content.decode())
        assert set(links) == {"csv", "json"}, (spec.path, links)
        for link in links.values():
            for part in spec.query.split("&"):
                assert part in link, (spec.path, link)

        rows = list(csv.DictReader(io.StringIO(_body(owner_client.get(links["csv"])).decode())))
        assert [row[spec.csv_key] for row in rows] == spec.expected, spec.path

        objects = orjson.loads(_body(owner_client.get(links["json"])))
        assert [spec.json_key(item) for item in objects] == spec.expected, spec.path


def test_an_export_without_a_sort_keeps_the_lists_default_order(owner_client, agent):
    _fill(agent)
    rows = list(csv.DictReader(io.StringIO(_body(owner_client.get(
        "/runs/export/?format=csv&status=completed")).decode())))  # fmt: skip
    # Newest first, the Runs list's (and the API's) own order.
    assert [row["total_tokens"] for row in rows] == [str(1000 + n) for n in reversed(KEPT)]


def test_an_expression_order_continues_across_export_batches(agent):
    """Tokens with some runs missing them sort those last, in batches of 4: the keyset of
    the sort carries the annotated value from one batch to the next."""
    conversation = conversation_factory(agent=agent, created_at=T0, updated_at=T0)
    for n in SHUFFLED:
        run_factory(
            conversation=conversation,
            total_tokens=None if n % 4 == 0 else 1000 + n,
            created_at=T0 + timedelta(seconds=n),
        )
    ordered, keyset, _headers = sorted_list(
        activity_selectors.RUN_SORTS,
        Run.objects.filter(agent=agent),
        {"sort": "tokens", "dir": "desc"},
    )
    runs = list(keyset_iterate(ordered, keyset=keyset, batch_size=4))
    with_tokens = [1000 + n for n in reversed(range(ROWS)) if n % 4 != 0]
    assert [run.total_tokens for run in runs] == with_tokens + [None] * 3
    assert len({run.id for run in runs}) == ROWS
