"""Exports of the console's lists: the filtered rows with the API's fields, streamed in keyset
batches so a 100,000-row export never holds the list in memory."""

import csv
import io
from datetime import UTC, datetime

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.activity.models import Run
from apps.activity.rendering import run_to_dict
from tests.activity.factories import conversation_factory, end_user_factory, run_factory
from tests.examples import examples

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, tzinfo=UTC)


@pytest.fixture
def signed_in(client, owner, agent):
    client.force_login(owner)
    return client


def _body(response) -> bytes:
    assert response.streaming
    return b"".join(response.streaming_content)


def test_runs_export_as_csv_has_the_filtered_rows_and_the_api_columns(signed_in, agent):
    failed = run_factory(agent=agent, status="failed", error_code="timeout", tool_names=["a", "b"])
    run_factory(agent=agent, status="completed")

    response = signed_in.get(reverse("activity:run_export") + "?format=csv&status=failed")

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="runs-{agent.pk}.csv"'
    rows = list(csv.DictReader(io.StringIO(_body(response).decode())))
    assert [row["id"] for row in rows] == [failed.id]
    # The API's columns, then the run's scores (apps.activity.score_filters).
    assert list(rows[0]) == [*run_to_dict(failed), "scores"]
    assert rows[0]["scores"] == "[]"
    assert rows[0]["tool_names"] == '["a","b"]'
    assert rows[0]["effort"] == ""  # null


def test_conversations_export_as_json_keeps_the_title_search(signed_in, agent, other_agent):
    wanted = conversation_factory(agent=agent, title="Refund for order 1042")
    conversation_factory(agent=agent, title="Shipping times")
    conversation_factory(agent=other_agent, title="Refund elsewhere")

    response = signed_in.get(reverse("activity:conversation_export") + "?format=json&q=refund")

    assert response["Content-Type"] == "application/json"
    data = orjson.loads(_body(response))
    assert [item["id"] for item in data] == [wanted.id]
    assert data[0]["object"] == "conversation"


def test_users_export_of_an_empty_list_is_a_header_only(signed_in, agent):
    response = signed_in.get(reverse("activity:user_export") + "?format=csv")
    assert _body(response).decode().strip() == (
        "object,id,external_id,identity_type,display_name,email,avatar_url,"
        "first_seen_at,last_seen_at"
    )
    end_user_factory(agent=agent)
    assert (
        len(orjson.loads(_body(signed_in.get(reverse("activity:user_export") + "?format=json"))))
        == 1
    )


def test_a_bad_filter_or_format_goes_back_to_the_list_with_the_reason(signed_in):
    response = signed_in.get(
        reverse("activity:run_export") + "?format=csv&status=exploded", follow=True
    )
    assert response.redirect_chain[-1][0].startswith(reverse("activity:run_list"))
    assert "Nothing exported" in response.content.decode()

    response = signed_in.get(reverse("activity:run_export") + "?format=xml", follow=True)
    assert "format must be one of csv, json" in response.content.decode()


def _copy_run(template: Run, copies: int) -> None:
    """`copies` copies of `template` made by PostgreSQL itself (seconds, not minutes)."""
    copied = [
        field.column
        for field in Run._meta.concrete_fields
        if field.attname not in ("row", "id", "request_id", "created_at")
    ]
    columns = ", ".join(f'"{column}"' for column in copied)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO activity_run (id, request_id, created_at, {columns})
            SELECT 'run_bulk' || lpad(i::text, 7, '0'), 'req-bulk-' || i,
                   %s::timestamptz + i * interval '1 second', {columns}
            FROM activity_run, generate_series(0, %s - 1) AS i
            WHERE activity_run.id = %s
            """,
            [T0, copies, template.id],
        )
        # Statistics, as autovacuum keeps them: planned as a table of one row, each batch of
        # the export sorted the whole table (100-340 ms a batch instead of a range of the index).
        cursor.execute("ANALYZE activity_run")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="bulk copy with generate_series")
def test_export_of_a_large_list_streams_in_keyset_batches(signed_in, agent):
    # 100,000 copies in `make test`, a third of them in `make test-fast` (tests/examples.py).
    copies = examples(100) * 1000
    _copy_run(run_factory(agent=agent), copies)

    with CaptureQueriesContext(connection) as queries:
        response = signed_in.get(reverse("activity:run_export") + "?format=csv")
        lines = sum(chunk.count(b"\n") for chunk in response.streaming_content)

    assert lines == 1 + copies + 1  # the header, the copies and the template run
    # Read in keyset batches of 1,000 rows, never the whole list at once.
    run_reads = [q["sql"] for q in queries.captured_queries if 'FROM "activity_run"' in q["sql"]]
    assert len(run_reads) == copies // 1000 + 1
    assert all("LIMIT 1000" in sql for sql in run_reads)
