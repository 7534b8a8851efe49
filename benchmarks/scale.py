"""Past one machine: the activity tables at 10 million runs — fill, lists, usage, recording, purge.

    nice -n 10 uv run python benchmarks/scale.py fill [--runs 10000000]
    nice -n 10 uv run python benchmarks/scale.py measure [--requests 200]
    nice -n 10 uv run python benchmarks/scale.py purge [--activity-days 30] [--minutes 30]
        [--baseline-seconds 60]

A dedicated PostgreSQL database (BENCH_SCALE_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_scale_10m) holds one workspace whose five
Agents share N runs (Agent 0 has 60 % of them, Agents 1-4 10 % each) spread evenly over 400
days: ten runs per conversation, two messages per run (the user's, and the assistant's answer
that names the run), 1,000 end users per Agent, the rollup rebuilt from the runs.

`fill` is set-based: each million runs is one `INSERT ... SELECT FROM generate_series` (with
their conversations and messages) in its own transaction, the secondary indexes dropped first
and rebuilt once at the end (their definitions are kept in a table of the database until they
are rebuilt, so an interrupted fill loses none). The database server's backend is reniced to 10
when this runs as root, as the client is.

`measure` times, through Django's test client with key authentication and the Redis rate
limiter on: the runs list (first page, a page at the middle cursor, a page near the end, the
status, model and user filters, a search), `GET /v1/usage` (default period, 90 days by week,
366 days by day), and recording (`POST /v1/ingest` of a new conversation with a message and a
run, sequentially) — the same numbers `--runs 0` gives on an empty database are the baseline.

`purge` sets the workspace's retention to `--activity-days` and runs `retention_apply` (the
hourly task's service, same batch sizes) in a loop while a loopback HTTP server (gunicorn, 2
workers) answers `GET /v1/runs` for Agent 1 from a client loop; it prints the purge rate and
the list's p50/p95/p99 before and during the purge.
"""

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import benchmark_environment  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_scale_10m"
WORKSPACE = "ws_scale"
AGENTS = [f"agt_scale_{i}" for i in range(5)]
DAYS = 400
CHUNK = 1_000_000
TABLES = ("activity_run", "activity_message", "activity_conversation")
# Run g (1..N, 1 the newest) was made at anchor - (g - 1) / N * 400 days; conversation
# c = (g - 1) / 10 holds runs 10c+1 .. 10c+10 and belongs to Agent AGENT_OF(c).
AGENT_OF = "CASE WHEN {c} %% 10 < 6 THEN 0 ELSE {c} %% 10 - 5 END"
RUN_AT = "%(anchor)s::timestamptz - (({g}) - 1)::float8 / %(n)s * interval '{days} days'"


def _run_at(g: str) -> str:
    return RUN_AT.format(g=g, days=DAYS)


def setup_django(database_url: str) -> None:
    benchmark_environment(database_url)
    import django

    django.setup()


def renice_backend() -> None:
    """Lower the priority of this connection's PostgreSQL backend too (root only)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    subprocess.run(["renice", "-n", "10", "-p", str(pid)], capture_output=True, check=False)


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


# ----------------------------------------------------------------------------------- fill


def _save_and_drop_indexes(cursor) -> None:
    cursor.execute(
        "CREATE TABLE IF NOT EXISTS scale_saved_index (name text PRIMARY KEY, definition text)"
    )
    cursor.execute(
        "INSERT INTO scale_saved_index SELECT i.indexname, i.indexdef FROM pg_indexes i "
        "WHERE i.tablename = ANY(%s) AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
        "WHERE c.conindid = (quote_ident(i.indexname))::regclass) ON CONFLICT DO NOTHING",
        [list(TABLES)],
    )
    cursor.execute("SELECT name FROM scale_saved_index")
    for (name,) in cursor.fetchall():
        cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def _rebuild_indexes(cursor) -> None:
    cursor.execute("SELECT to_regclass('scale_saved_index')")
    if cursor.fetchone()[0] is None:
        return
    cursor.execute("SET maintenance_work_mem = '1GB'")
    cursor.execute("SET max_parallel_maintenance_workers = 0")
    cursor.execute("SELECT name, definition FROM scale_saved_index ORDER BY name")
    for name, definition in cursor.fetchall():
        started = time.monotonic()
        cursor.execute(definition.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
        cursor.execute("DELETE FROM scale_saved_index WHERE name = %s", [name])
        print(f"  index {name} in {time.monotonic() - started:.0f} s", flush=True)
    cursor.execute("DROP TABLE scale_saved_index")


def _fill_chunk(cursor, lo: int, hi: int, n: int, anchor) -> None:
    """Runs lo..hi (whole conversations: lo - 1 and hi are multiples of 10)."""
    params = {"lo": lo, "hi": hi, "n": n, "anchor": anchor, "clo": (lo - 1) // 10,
              "chi": hi // 10 - 1}  # fmt: skip
    agent = AGENT_OF.format(c="c")
    cursor.execute(
        "INSERT INTO activity_conversation (id, agent_id, user_id, title, status, source, "
        "created_at, updated_at) SELECT 'conv_s' || c, 'agt_scale_' || " + agent + ", "
        "'usr_s' || (c %% 1000), 'Chat ' || c, 'completed', 'embed', "
        + _run_at("10 * c + 10")
        + " - interval '1 second', "
        + _run_at("10 * c + 1")
        + " + interval '3 seconds' "
        "FROM generate_series(%(clo)s, %(chi)s) c",
        params,
    )
    run_agent = AGENT_OF.format(c="((g - 1) / 10)")
    cursor.execute(
        "INSERT INTO activity_run (id, agent_id, conversation_id, user_id, request_id, status, "
        "model_id, sdk_version, protocol_version, input_tokens, output_tokens, total_tokens, "
        "cache_read_tokens, cache_write_tokens, credits_charged, tool_names, failed_tool_names, "
        "component_kinds, error_code, first_chunk_at, completed_at, total_turn_latency_ms, "
        "created_at, updated_at) "
        "SELECT 'run_s' || g, 'agt_scale_' || " + run_agent + ", 'conv_s' || ((g - 1) / 10), "
        "'usr_s' || (((g - 1) / 10) %% 1000), 'req_' || g, "
        "(ARRAY['completed','completed','completed','failed','aborted'])[g %% 5 + 1], "
        "(ARRAY['gpt-4.1-mini','claude-sonnet-4','gemini-2.5-flash'])[g %% 3 + 1], '5.0.12', 1, "
        "1200 + g %% 500, 200 + g %% 90, 1400 + g %% 590, g %% 300, g %% 40, "
        "round((0.1 + (g %% 97) / 100.0)::numeric, 4), "
        "CASE WHEN g %% 3 = 0 THEN '[\"search_knowledge\"]' ELSE '[]' END::jsonb, '[]', '[]', "
        "CASE WHEN g %% 5 = 3 THEN 'tool_error' END, "
        + _run_at("g")
        + " + interval '400 ms', "
        + _run_at("g")
        + " + interval '2 seconds', "
        "300 + (g::bigint * 7919) %% 20000, " + _run_at("g") + ", " + _run_at("g") + " "
        "FROM generate_series(%(lo)s, %(hi)s) g",
        params,
    )
    cursor.execute(
        "INSERT INTO activity_message (id, agent_id, conversation_id, role, parts, run_id, "
        "created_at, updated_at) "
        "SELECT 'msg_s' || g || CASE WHEN r = 0 THEN 'u' ELSE 'a' END, "
        "'agt_scale_' || " + run_agent + ", 'conv_s' || ((g - 1) / 10), "
        "CASE WHEN r = 0 THEN 'user' ELSE 'assistant' END, "
        "jsonb_build_array(jsonb_build_object('type', 'text', 'text', CASE WHEN r = 0 "
        "THEN 'Where is my order ' || g || '?' ELSE 'Order ' || g || ' ships tomorrow.' END)), "
        "CASE WHEN r = 1 THEN 'run_s' || g END, "
        + _run_at("g")
        + " + r * interval '2 seconds', NULL "
        "FROM generate_series(%(lo)s, %(hi)s) g, (VALUES (0), (1)) AS v(r)",
        params,
    )


def fill(runs: int) -> None:
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.activity.models import Run
    from apps.usage.models import DailyLatency, DailyUsage
    from apps.usage.rollup import rollup_rebuild
    from apps.workspaces.models import Agent, Workspace

    call_command("migrate", verbosity=0)
    renice_backend()
    workspace, _ = Workspace.objects.get_or_create(id=WORKSPACE, defaults={"name": "Scale"})
    for index, agent_id in enumerate(AGENTS):
        Agent.objects.get_or_create(
            id=agent_id, defaults={"workspace": workspace, "name": f"Scale Agent {index}"}
        )
    have = Run.objects.filter(agent_id__in=AGENTS).count()
    started = time.monotonic()
    with connection.cursor() as cursor:
        # The foreign keys hold by construction (the five Agents exist): checking 30 million
        # of them at each commit would take longer than the inserts.
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("SELECT to_regclass('scale_saved_index') IS NOT NULL")
        resuming = cursor.fetchone()[0] and have % CHUNK == 0 and have < runs
        if have != runs:
            print(f"filling {runs:,} runs (had {have:,}); {load()}", flush=True)
            first = have + 1 if resuming else 1
            if not resuming:
                for model in ("run", "message", "conversation", "enduser"):
                    cursor.execute(
                        f"DELETE FROM activity_{model} WHERE agent_id LIKE 'agt_scale_%%'"
                    )
                cursor.execute(
                    "INSERT INTO activity_enduser (id, agent_id, external_id, identity_type, "
                    "display_name, first_seen_at, last_seen_at) SELECT 'usr_s' || u, "
                    "'agt_scale_' || a, 'ext-' || u, 'user', 'User ' || u, now(), now() "
                    "FROM generate_series(0, 999) u, generate_series(0, 4) a"
                )
                _save_and_drop_indexes(cursor)
                cursor.execute("DROP TABLE IF EXISTS scale_anchor")
                cursor.execute(
                    "CREATE TABLE scale_anchor AS SELECT %s::timestamptz AS at", [timezone.now()]
                )
            cursor.execute(
                "CREATE TABLE IF NOT EXISTS scale_anchor AS SELECT created_at AS at "
                "FROM activity_run WHERE id = 'run_s1' AND agent_id = 'agt_scale_0'"
            )  # a fill interrupted before the anchor was kept: run 1 was made at the anchor
            cursor.execute("SELECT at FROM scale_anchor")
            anchor = cursor.fetchone()[0]
            for lo in range(first, runs + 1, CHUNK):
                hi = min(lo + CHUNK - 1, runs)
                chunk_started = time.monotonic()
                with transaction.atomic():
                    _fill_chunk(cursor, lo, hi, runs, anchor)
                print(
                    f"  runs {lo:,}..{hi:,} with conversations and messages in "
                    f"{time.monotonic() - chunk_started:.0f} s; {load()}",
                    flush=True,
                )
        cursor.execute("SET session_replication_role = origin")
        _rebuild_indexes(cursor)
        cursor.execute("DROP TABLE IF EXISTS scale_anchor")
        for table in (*TABLES, "activity_enduser"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    if have != runs:
        rollup_started = time.monotonic()
        counted = rollup_rebuild(agent_ids=AGENTS)
        print(f"rollup rebuilt from {counted:,} runs in {time.monotonic() - rollup_started:.0f} s")
        # As autovacuum would before long: usage read right after the fill, on statistics of
        # the empty rollup, took p95 70.8 ms a year instead of 46.9 (docs/performance.md).
        with connection.cursor() as cursor:
            for model in (DailyUsage, DailyLatency):
                cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    print(f"fill done in {time.monotonic() - started:.0f} s; {load()}")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class "
            "WHERE relname = ANY(%s)",
            [list(TABLES)],
        )
        for name, size in cursor.fetchall():
            print(f"  {name}: {size} with indexes")


# -------------------------------------------------------------------------------- measure


def _key(agent_id: str, scopes: list[str]) -> str:
    from apps.workspaces.models import Agent
    from apps.workspaces.services import api_key_create

    _, raw = api_key_create(agent=Agent.objects.get(pk=agent_id), name="scale", scopes=scopes)
    return raw


def _time(client, path: str, headers: dict, requests: int, method: str = "get", body=None):
    samples = []
    for index in range(requests + 5):
        started = time.perf_counter()
        if method == "get":
            response = client.get(path, headers=headers)
        else:
            response = client.post(
                path, data=body(index), content_type="application/json", headers=headers
            )
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (path, response.status_code, response.content[:300])
        if index >= 5:  # the first five warm up the key cache and the connection
            samples.append(elapsed)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def _cursor_at(agent_id: str, offset: int) -> str:
    from apps.activity.models import Run
    from apps.activity.selectors import RUN_KEYSET
    from apps.common.keyset import cursor_encode

    run = Run.objects.filter(agent_id=agent_id).order_by(*RUN_KEYSET.order_by)[offset]
    return cursor_encode(RUN_KEYSET, run.created_at, run.id)


def _ingest_body(prefix: str):
    import json

    def body(index: int) -> str:
        conversation, at = f"conv_{prefix}_{index}", "2026-01-01T00:00:00Z"
        return json.dumps(
            [
                {"type": "conversation", "id": conversation, "title": "Scale", "source": "embed",
                 "status": "completed", "created_at": at},
                {"type": "message", "id": f"msg_{prefix}_{index}", "role": "user",
                 "conversation_id": conversation, "parts": [{"type": "text", "text": "Hi"}],
                 "created_at": at},
                {"type": "run", "id": f"run_{prefix}_{index}", "conversation_id": conversation,
                 "request_id": f"req_{index}", "sdk_version": "5.0.12", "protocol_version": 1,
                 "status": "completed", "input_tokens": 1200, "output_tokens": 200,
                 "total_tokens": 1400, "total_turn_latency_ms": 2300.0, "created_at": at,
                 "completed_at": "2026-01-01T00:00:02Z"},
            ]
        )  # fmt: skip

    return body


def measure(requests: int) -> None:
    from datetime import timedelta

    from django.core.management import call_command
    from django.test import Client
    from django.utils import timezone

    from apps.activity.models import Run
    from apps.usage.tiers import months_seal

    call_command("migrate", verbosity=0)
    renice_backend()
    started = time.monotonic()
    sealed = months_seal(time_budget_seconds=3600).sealed
    print(
        f"sealed {sealed} closed months (beat's usage.seal_months) in {time.monotonic() - started:.1f} s"
    )
    client = Client()
    big = AGENTS[0]
    runs = Run.objects.filter(agent_id=big).count()
    total = Run.objects.filter(agent_id__in=AGENTS).count()
    print(f"{total:,} runs in all; Agent {big} has {runs:,}; {load()} on {os.cpu_count()} cores")
    scopes = ["runs:read", "conversations:read", "usage:read"]
    read = {"Authorization": f"Bearer {_key(big, scopes)}"}
    today = timezone.now().date()
    middle, near_end = _cursor_at(big, runs // 2), _cursor_at(big, max(0, runs - 40))
    cases = {
        "runs: first page (20)": "/v1/runs",
        f"runs: page after row {runs // 2:,}": f"/v1/runs?after={middle}",
        f"runs: page after row {runs - 40:,}": f"/v1/runs?after={near_end}",
        "runs: status=failed": "/v1/runs?status=failed",
        "runs: model_id=claude-sonnet-4": "/v1/runs?model_id=claude-sonnet-4",
        "runs: user_id=usr_s7": "/v1/runs?user_id=usr_s7",
        "conversations: first page (20)": "/v1/conversations",
        "messages of one conversation": "/v1/conversations/conv_s0/messages",
        "usage: default (this month)": "/v1/usage",
        "usage: 90 days by week": f"/v1/usage?from={today - timedelta(days=89)}&granularity=week",
        "usage: 366 days by day": f"/v1/usage?from={today - timedelta(days=365)}",
    }
    for label, path in cases.items():
        p50, p95 = _time(client, path, read, requests)
        print(f"  {label:40s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  ({load()})", flush=True)
    write = {"Authorization": f"Bearer {_key(big, ['activity:write'])}"}
    prefix = f"rec{int(time.time())}"
    started = time.monotonic()
    p50, p95 = _time(client, "/v1/ingest", write, requests, "post", _ingest_body(prefix))
    rate = (requests + 5) / (time.monotonic() - started)
    print(
        f"  {'recording: POST /v1/ingest (conv+msg+run)':40s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms"
        f"  {rate:.0f} ingests/s sequential ({load()})",
        flush=True,
    )
    for model in ("run", "message"):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM activity_{model} WHERE agent_id = %s AND id LIKE %s",
                [big, f"%{prefix}%"],
            )
    from apps.activity.models import Conversation

    Conversation.objects.filter(agent_id=big, id__startswith=f"conv_{prefix}").delete()


# ---------------------------------------------------------------------------------- purge


def _serve(database_url: str, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    return subprocess.Popen(
        ["nice", "-n", "10", sys.executable, "-m", "gunicorn", "config.wsgi", "--bind",
         f"127.0.0.1:{port}", "--workers", "2", "--threads", "2", "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip


def _list_loop(url: str, key: str, stop: threading.Event, samples: list, errors: list) -> None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    while not stop.is_set():
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            samples.append((time.time(), (time.perf_counter() - started) * 1000))
        except Exception as error:
            errors.append(repr(error))
        time.sleep(0.05)  # bounded: about 15 requests a second at most


def _percentiles(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    ordered = sorted(samples)

    def at(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))]

    return (
        f"{len(ordered)} requests, p50 {at(0.50):.1f} ms, p95 {at(0.95):.1f} ms, "
        f"p99 {at(0.99):.1f} ms, max {ordered[-1]:.1f} ms"
    )


def purge(database_url: str, activity_days: int, minutes: float, baseline_seconds: float) -> None:
    from django.db import connection

    from apps.activity.models import Conversation, Message, Run
    from apps.retention.services import retention_apply, retention_policy_set
    from apps.workspaces.models import Workspace

    renice_backend()
    port = 18000 + os.getpid() % 1000
    server = _serve(database_url, port)
    key = _key(AGENTS[1], ["runs:read"])
    url = f"http://127.0.0.1:{port}/v1/runs"
    for _ in range(120):
        try:
            urllib.request.urlopen(
                urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"}), timeout=5
            ).read()
            break
        except Exception:
            time.sleep(1)
    samples: list = []
    errors: list = []
    stop = threading.Event()
    loop = threading.Thread(target=_list_loop, args=(url, key, stop, samples, errors))
    try:
        loop.start()
        time.sleep(baseline_seconds)
        before = [ms for _, ms in samples]
        print(f"runs list before the purge ({load()}): {_percentiles(before)}", flush=True)
        counts = [
            m.objects.filter(agent_id__in=AGENTS).count() for m in (Run, Message, Conversation)
        ]
        print(f"before: {counts[0]:,} runs, {counts[1]:,} messages, {counts[2]:,} conversations")
        retention_policy_set(
            workspace=Workspace.objects.get(pk=WORKSPACE), activity_days=activity_days
        )
        started, purge_started_at = time.monotonic(), time.time()
        deadline = started + minutes * 60
        totals = [0, 0, 0]
        loads = []
        while time.monotonic() < deadline:
            result = retention_apply()
            for purged in result.purged.values():
                totals[0] += purged.runs
                totals[1] += purged.messages
                totals[2] += purged.conversations
            loads.append(os.getloadavg()[0])
            elapsed = time.monotonic() - started
            print(
                f"  {elapsed:6.0f} s: {totals[0]:,} runs, {totals[1]:,} messages, "
                f"{totals[2]:,} conversations purged ({totals[0] / elapsed:,.0f} runs/s); "
                f"{load()}",
                flush=True,
            )
            if result.finished:
                break
        elapsed = time.monotonic() - started
        during = [ms for at, ms in samples if at >= purge_started_at]
        print(
            f"purge: {totals[0]:,} runs, {totals[1]:,} messages, {totals[2]:,} conversations "
            f"in {elapsed:.0f} s = {totals[0] / elapsed:,.0f} runs/s, "
            f"{(totals[0] + totals[1] + totals[2]) / elapsed:,.0f} rows/s; "
            f"{'finished' if result.finished else 'stopped at the time limit'}; load average "
            f"during {min(loads):.1f}-{max(loads):.1f}",
            flush=True,
        )
        print(f"runs list during the purge: {_percentiles(during)}; errors {len(errors)}")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('activity_run'))")
            print(f"activity_run now {cursor.fetchone()[0]} with indexes")
    finally:
        stop.set()
        loop.join()
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("fill", "measure", "purge"))
    parser.add_argument("--runs", type=int, default=10_000_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--activity-days", type=int, default=30)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--baseline-seconds", type=float, default=60, help="list load before")
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_SCALE_DATABASE_URL", DEFAULT_URL)
    setup_django(database_url)
    if args.command == "fill":
        if args.runs % 10:
            parser.error("--runs must be a multiple of 10 (ten runs per conversation)")
        fill(args.runs)
    elif args.command == "measure":
        measure(args.requests)
    else:
        purge(database_url, args.activity_days, args.minutes, args.baseline_seconds)


if __name__ == "__main__":
    main()
