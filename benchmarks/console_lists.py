"""Time the console's sorted lists and their counts at scale (issue 26, item 5).

    uv run python benchmarks/console_lists.py [--runs 1000000] [--users 200000]
        [--documents 100000] [--deliveries 1000000] [--audit-events 1000000] [--requests 15]
        [--only "audit log,runs"]

Fills a benchmark database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_bench, shared with api_lists.py, whose fill of
runs it reuses) with one Agent's runs, users, knowledge documents and webhook deliveries
(generate_series; a table already holding the asked number is kept), and its workspace's audit log entries, then asks each list page (or those `--only` names),
signed in as the workspace's owner, in process through Django's test client: for every sortable
column, both ways, the first page and a page at a cursor in the middle of the list (the row at
half its length, in that order). Each case is `--requests` requests after one warm-up; it prints
the median and p95 of the whole page (the count, the sort, the template) and of its page query
alone (`paginate`, the 25 rows in that order after that cursor), and beside them the
two counts a list could show: the bounded count the pages use (`bounded_count`, COUNT over at
most 10,001 rows) and an exact COUNT(*), for comparison. Then the machine's load average."""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_bench"
AGENT = "agt_bench"


def _literal(field):
    """The value a column gets in the fill when the fill does not name it: its default."""
    default = field.get_default()
    return default if default is not None or field.null else ""


def fill(model, count: int, columns: dict[str, str]) -> None:
    """`count` rows of `model` for the bench Agent: `columns` are SQL over `g` (1..count), the
    other columns their field's default (one bound value each)."""
    from django.db import connection

    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE agent_id = %s", [AGENT])
        have = cursor.fetchone()[0]
        if have == count:
            return
        print(f"filling {count:,} rows of {table} (had {have:,}) ...", flush=True)
        started = time.monotonic()
        cursor.execute(f"DELETE FROM {table} WHERE agent_id = %s", [AGENT])
        names, values, params = [], [], []
        for field in model._meta.concrete_fields:
            if field.column in columns:
                names.append(field.column)
                values.append(columns[field.column].replace("%", "%%"))
            elif not field.primary_key or field.column != "row":
                names.append(field.column)
                values.append("%s")
                params.append(field.get_db_prep_save(_literal(field), connection))
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(values)} "
            "FROM generate_series(1, %s) g",
            [*params, count],
        )
        cursor.execute(f"ANALYZE {table}")
        print(f"  in {time.monotonic() - started:.1f} s", flush=True)


def prepare(args) -> None:
    from benchmarks.api_lists import prepare as prepare_runs

    prepare_runs(args.runs)  # migrates, makes the workspace, the Agent and its runs

    from apps.activity.models import EndUser
    from apps.knowledge.models import KnowledgeDocument
    from apps.webhooks.models import Webhook, WebhookDelivery

    fill(
        EndUser,
        args.users,
        {
            "id": "'usr_bench_' || lpad(g::text, 8, '0')",
            "agent_id": f"'{AGENT}'",
            "external_id": "'ext-' || g",
            "identity_type": "(ARRAY['user','anonymous','preview','unknown'])[g % 4 + 1]",
            "display_name": "CASE WHEN g % 5 = 0 THEN NULL ELSE 'Person ' || md5(g::text) END",
            "email": "'p' || g || '@example.org'",
            "first_seen_at": "now() - g * interval '1 minute'",
            "last_seen_at": "now() - (g * 7919 % 1000003) * interval '1 second'",
        },
    )
    fill(
        KnowledgeDocument,
        args.documents,
        {
            "id": "'doc_bench_' || lpad(g::text, 8, '0')",
            "agent_id": f"'{AGENT}'",
            "name": "'Document ' || md5(g::text)",
            "source_type": "CASE WHEN g % 3 = 0 THEN 'url' ELSE 'file' END",
            "source_url": "CASE WHEN g % 3 = 0 THEN 'https://example.com/' || g END",
            "normalized_url": "CASE WHEN g % 3 = 0 THEN 'https://example.com/' || g END",
            "file_size_bytes": "CASE WHEN g % 3 = 0 THEN NULL ELSE g * 37 % 5000000 END",
            "content_sha256": "CASE WHEN g % 3 = 0 THEN NULL ELSE md5(g::text) END",
            "kind": "(ARRAY['pdf','docx','md','html'])[g % 4 + 1]",
            "status": "(ARRAY['ready','ready','ready','failed','processing'])[g % 5 + 1]",
            "created_at": "now() - g * interval '1 minute'",
            "updated_at": "now() - (g * 7919 % 1000003) * interval '1 second'",
        },
    )
    from apps.workspaces.models import AuditEvent

    fill(
        AuditEvent,
        args.audit_events,
        {
            "id": "'aud_bench_' || lpad(g::text, 8, '0')",
            "workspace_id": "'ws_bench'",
            "agent_id": f"'{AGENT}'",
            "action": "(ARRAY['agent.updated','api_key.created','api_key.revoked',"
            "'document.created','document.deleted','webhook.updated'])[g % 6 + 1]",
            "actor_type": "(ARRAY['user','api_key','system'])[g % 3 + 1]",
            # 500 people: long runs of one actor, which the keyset crosses row by row.
            "actor_id": "'p' || g % 500 || '@example.org'",
            "actor_name": "'Person ' || md5((g % 500)::text)",
            "target_type": "'api_key'",
            "target_id": "'key_' || g % 10000",
            "target_name": "'Key ' || g % 10000",
            "created_at": "now() - g * interval '1 second'",
        },
    )
    webhook, _ = Webhook.objects.get_or_create(
        agent_id=AGENT, defaults={"url": "https://hooks.example.com/bench", "secret": "x" * 32}
    )
    fill(
        WebhookDelivery,
        args.deliveries,
        {
            "id": "'dlv_bench_' || lpad(g::text, 8, '0')",
            "agent_id": f"'{AGENT}'",
            "webhook_id": f"'{webhook.pk}'",
            "run_id": "'run_bench_' || lpad(g::text, 8, '0')",
            "event_type": "(ARRAY['run.completed','run.failed'])[g % 2 + 1]",
            "body": "'{}'",
            "status": "(ARRAY['succeeded','succeeded','succeeded','failed','pending'])[g % 5 + 1]",
            "attempts": "g % 7",
            "created_at": "now() - g * interval '1 second'",
            "updated_at": "now() - g * interval '1 second'",
        },
    )


def owner_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.workspaces.models import Membership

    user, _ = get_user_model().objects.get_or_create(
        username="bench-owner", defaults={"email": "bench-owner@example.com"}
    )
    Membership.objects.get_or_create(
        workspace_id="ws_bench", user=user, defaults={"role": Membership.Role.OWNER}
    )
    client = Client()
    client.force_login(user)
    return client


def lists():
    """(label, page path, its sorts, its rows, the page's count query)."""
    from apps.activity import selectors as activity
    from apps.knowledge import selectors as knowledge
    from apps.webhooks import selectors as webhooks
    from apps.workspaces.audit_pages import AUDIT_SORTS
    from apps.workspaces.models import Agent
    from apps.workspaces.selectors import AuditFilters, audit_event_list

    agent = Agent.objects.get(pk=AGENT)
    return [
        ("runs", "/runs/", activity.RUN_SORTS, activity.run_list(agent=agent)),
        (
            "conversations",
            "/conversations/",
            activity.CONVERSATION_SORTS,
            activity.conversation_list(agent=agent, filters={}),
        ),
        ("users", "/users/", activity.USER_SORTS, activity.user_list(agent=agent)),
        (
            "knowledge",
            "/knowledge/",
            knowledge.DOCUMENT_SORTS,
            knowledge.document_queryset(agent=agent),
        ),
        ("deliveries", "/webhooks/", webhooks.DELIVERY_SORTS, webhooks.delivery_list(agent=agent)),
        (
            "audit log",
            "/audit-log/",
            AUDIT_SORTS,
            audit_event_list(workspace_id=agent.workspace_id, filters=AuditFilters()),
        ),
    ]


def middle_cursor(sorts, queryset, choice, total: int) -> str:
    from apps.common.keyset import cursor_encode

    ordered, keyset = sorts.apply(queryset, choice)
    row = ordered.order_by(*keyset.order_by)[total // 2 : total // 2 + 1].get()
    return cursor_encode(keyset, keyset.value_of(row), row.id)


def explain(queryset) -> str:
    """PostgreSQL's plan of a page query, run (`EXPLAIN ANALYZE`): 'Index Scan ... 0.1 ms, 5
    buffers', or the plan whole when it sorts."""
    import re

    from django.db import connection

    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    if "Sort" in plan:
        return "SORTS:\n" + plan
    scan = re.search(r"(Index Only Scan|Index Scan)( Backward)? using (\w+)", plan)
    took = re.search(r"Execution Time: ([\d.]+) ms", plan)
    buffers = sum(int(n) for n in re.findall(r"(?:hit|read)=(\d+)", plan.split("Planning")[0]))
    filtered = sum(int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan))
    return (
        f"{scan.group(3) if scan else plan.splitlines()[0]}: {float(took.group(1)):.2f} ms, "
        f"{buffers} buffers, {filtered} rows filtered out"
    )


def timed(function, repeats: int) -> list[float]:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[max(0, int(len(ordered) * 0.95 + 0.5) - 1)]
    return f"p50 {statistics.median(ordered):7.1f} ms  p95 {p95:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--deliveries", type=int, default=1_000_000)
    parser.add_argument("--audit-events", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=15)
    parser.add_argument(
        "--only", default="", help="Comma-separated list labels to measure (default: every list)."
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="Instead of timing pages, print each page query's plan as PostgreSQL runs it.",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    ensure_database(database_url)
    os.environ.update(
        DATABASE_URL=database_url,
        REDIS_URL=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
        DEBUG="0",
    )
    prepare(args)

    from apps.common.keyset import PageRequest, cursor_decode, paginate
    from apps.workspaces.console import bounded_count

    client = owner_client()
    print(f"load average before: {' / '.join(f'{v:.2f}' for v in load_before)} (1/5/15 min)")
    worst = 0.0
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    for label, path, sorts, queryset in lists():
        if only and label not in only:
            continue
        total = queryset.count()
        exact = timed(lambda q=queryset: q.count(), max(3, args.requests // 5))
        bounded = timed(lambda q=queryset: bounded_count(q), args.requests)
        print(f"\n{label}: {total:,} rows")
        print(f"  count shown (bounded, 10,000+)  {summary(bounded)}")
        print(f"  exact COUNT(*), not shown       {summary(exact)}")
        for column in sorts.columns:
            for direction in ("desc", "asc"):
                choice = sorts.choose({"sort": column.name, "dir": direction})
                query = f"?sort={column.name}&dir={direction}"
                cursor = middle_cursor(sorts, queryset, choice, total)
                deep = f"{query}&after={cursor}"
                ordered, keyset = sorts.apply(queryset, choice)
                for case, url, after in (("first", query, None), ("middle", deep, cursor)):

                    def fetch(after=after, ordered=ordered, keyset=keyset) -> None:
                        paginate(ordered, keyset=keyset, page=PageRequest(limit=25, after=after))

                    def get(address=path + url) -> None:
                        response = client.get(address)
                        assert response.status_code == 200, (address, response.status_code)
                        assert b"no longer valid" not in response.content, address

                    if args.explain:
                        page = ordered.order_by(*keyset.order_by)
                        if after is not None:
                            page = page.filter(keyset.after(*cursor_decode(keyset, after)))
                        print(f"  {column.name:>10} {direction:<4} {case:<6} plan  "
                              f"{explain(page[:26])}")  # fmt: skip
                        continue
                    times = timed(get, args.requests)
                    worst = max(worst, sorted(times)[-1])
                    print(f"  {column.name:>10} {direction:<4} {case:<6} page  {summary(times)}")
                    print(
                        f"  {'':>10} {'':<4} {'':<6} query {summary(timed(fetch, args.requests))}"
                    )
    if not args.explain:
        print(f"\nslowest single page: {worst:.1f} ms")
    print(f"load average after: {' / '.join(f'{v:.2f}' for v in os.getloadavg())} (1/5/15 min)")


if __name__ == "__main__":
    main()
