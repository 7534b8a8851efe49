"""Benchmark what issue 26's dashboard work adds to the console, over N runs (default 1,000,000).

    nice -n 10 uv run python benchmarks/dashboards.py [--runs 1000000] [--users 10000] [--repeat 7]

Fills a dedicated PostgreSQL database (BENCH_DASH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_dash_bench) with one Agent's runs over 90 days
and `--users` end users, one of whom ("the heavy user", seen most recently, so on the Users
list's first page) has 10 % of all runs; builds the usage rollup; VACUUM ANALYZE. Then times,
in process (median and max of `--repeat` after one warm-up):

- `user_usage` for the Users list's first page (25 users with the heavy one) and second page,
  and whether PostgreSQL answers it with an index-only scan of run_agent_user;
- the Overview's 30-day latency percentiles as the page computes them (the activity rollup's
  day histograms, apps.activity.overview_rollup), beside the same histograms counted from the
  runs (what an Overview filtered by user does) and the former `percentile_cont` query over the
  same runs; the first two must give the same numbers;
- the credit-limit banner: a cache hit (every console page) and a miss (one sum of the month).
Prints the load average before and after.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_dash_bench"
AGENT = "agt_dash_bench"


def fill(runs: int, users: int) -> None:
    from django.core.management import call_command
    from django.db import connection

    from apps.activity.models import Run
    from apps.usage.rollup import rollup_rebuild
    from apps.workspaces.models import Agent, Workspace

    call_command("migrate", verbosity=0)
    workspace, _ = Workspace.objects.get_or_create(id="ws_dash_bench", defaults={"name": "Bench"})
    Workspace.objects.filter(pk=workspace.pk).update(monthly_credit_limit=1000)
    Agent.objects.get_or_create(id=AGENT, defaults={"workspace": workspace, "name": "Bench"})
    if Run.objects.filter(agent_id=AGENT).count() == runs:
        return
    print(f"filling {runs:,} runs and {users:,} users ...", flush=True)
    started = time.monotonic()
    with connection.cursor() as cursor:
        for table in ("activity_run", "activity_conversation", "activity_enduser"):
            cursor.execute(f"DELETE FROM {table} WHERE agent_id = %s", [AGENT])
        # usr_00000 is the heavy user, seen last; the others by number.
        cursor.execute(
            "INSERT INTO activity_enduser (id, agent_id, identity_type, display_name, "
            "first_seen_at, last_seen_at) SELECT 'usr_' || lpad(g::text, 5, '0'), %s, 'user', "
            "'User ' || g, now() - interval '90 days', now() - g * interval '1 second' "
            "FROM generate_series(0, %s - 1) g",
            [AGENT, users],
        )
        cursor.execute(
            "INSERT INTO activity_conversation (id, agent_id, title, status, source, created_at, "
            "updated_at) SELECT 'conv_' || g, %s, 'Chat', 'completed', 'embed', now(), now() "
            "FROM generate_series(1, 1000) g",
            [AGENT],
        )
        cursor.execute(
            "INSERT INTO activity_run (id, agent_id, conversation_id, user_id, request_id, "
            "status, model_id, sdk_version, protocol_version, input_tokens, output_tokens, "
            "total_tokens, cache_read_tokens, cache_write_tokens, credits_charged, tool_names, "
            "failed_tool_names, component_kinds, document_ids, first_chunk_at, completed_at, "
            "total_turn_latency_ms, created_at, updated_at) "
            "SELECT 'run_' || lpad(g::text, 8, '0'), %s, 'conv_' || (g %% 1000 + 1), "
            "CASE WHEN g %% 10 = 0 THEN 'usr_00000' "
            "ELSE 'usr_' || lpad((1 + g %% (%s - 1))::text, 5, '0') END, 'req_' || g, "
            "(ARRAY['completed','completed','completed','failed'])[g %% 4 + 1], 'gpt-4.1-mini', "
            "'5.0.12', 1, 1200 + g %% 500, 200 + g %% 90, 1400 + g %% 590, 0, 0, 0.42, "
            "'[\"search\"]', '[]', '[]', '[]', now(), now(), 300 + (g::bigint * 7919) %% 9000, "
            "now() - (g %% 7776000) * interval '1 second', now() "
            "FROM generate_series(1, %s) g",
            [AGENT, users, runs],
        )
    rollup_rebuild(agent_ids=[AGENT])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE activity_run")
    print(f"filled in {time.monotonic() - started:.1f} s", flush=True)


def timed(function, repeat: int) -> str:
    function()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return f"median {statistics.median(samples):7.1f} ms, max {max(samples):7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    url = os.environ.get("BENCH_DASH_DATABASE_URL", DEFAULT_URL)
    ensure_database(url)
    os.environ.update(
        {
            "DATABASE_URL": url,
            "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    import django

    django.setup()
    from django.core.cache import cache
    from django.db import connection

    from apps.activity import selectors
    from apps.activity.overview_rollup import _latency as latency_of_rollups
    from apps.activity.overview_runs import latency_of_runs
    from apps.activity.overview_types import OverviewScope
    from apps.activity.rollup_rebuild import rollup_rebuild_sql
    from apps.common.latency import merged, percentiles
    from apps.usage.banner import _key, credit_banner
    from apps.workspaces.models import Agent

    print("load average before:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    fill(args.runs, args.users)
    agent = Agent.objects.select_related("workspace").get(pk=AGENT)
    first_page = list(
        selectors.user_list(agent=agent).order_by(*selectors.USER_KEYSET.order_by)[:25]
    )
    second_page = list(
        selectors.user_list(agent=agent).order_by(*selectors.USER_KEYSET.order_by)[25:50]
    )
    for name, page in (("first page (heavy user)", first_page), ("second page", second_page)):
        ids = [user.id for user in page]
        runs = sum(u.runs for u in selectors.user_usage(agent=agent, user_ids=ids).values())
        print(
            f"user_usage, {name}, {runs:,} runs:",
            timed(lambda ids=ids: selectors.user_usage(agent=agent, user_ids=ids), args.repeat),
        )
    with connection.cursor() as cursor:
        ids = [user.id for user in first_page]
        cursor.execute(
            "EXPLAIN SELECT user_id, count(user_id), sum(total_tokens), sum(credits_charged) "
            "FROM activity_run WHERE agent_id = %s AND user_id = ANY(%s) GROUP BY user_id",
            [AGENT, ids],
        )
        plan = " / ".join(row[0].strip() for row in cursor.fetchall())
    print("plan:", "index-only scan" if "Index Only Scan" in plan else plan)

    scope = OverviewScope.last_days(30)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM activity_rollup WHERE agent_id = %s", [AGENT])
        if not cursor.fetchone()[0]:
            rollup_rebuild_sql([AGENT], steps=False)  # the runs were filled around the recording
    wanted = (50, 95)
    from_rollup = percentiles(merged(latency_of_rollups(AGENT, scope).values()), wanted)
    from_runs = percentiles(merged(latency_of_runs(AGENT, scope).values()), wanted)
    assert from_rollup == from_runs, (from_rollup, from_runs)
    print(f"Overview latency p50/p95 {from_rollup}: the rollup and the runs agree")
    print(
        "Overview latency, 30 days, the activity rollup (now):",
        timed(lambda: latency_of_rollups(AGENT, scope), args.repeat),
    )
    print(
        "Overview latency, 30 days, histogram counted from the runs (a user-filtered Overview):",
        timed(lambda: latency_of_runs(AGENT, scope), args.repeat),
    )
    where, params = scope.sql_conditions(AGENT)
    former = (
        "SELECT date_trunc('day', created_at AT TIME ZONE 'UTC'), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY total_turn_latency_ms), "
        "percentile_cont(0.95) WITHIN GROUP (ORDER BY total_turn_latency_ms) "
        f"FROM activity_run WHERE {where} AND total_turn_latency_ms IS NOT NULL "
        "GROUP BY ROLLUP (1)"
    )

    def percentile_cont() -> None:
        with connection.cursor() as cursor:
            cursor.execute(former, params)
            cursor.fetchall()

    print("Overview latency, 30 days, former percentile_cont:", timed(percentile_cont, args.repeat))

    workspace = agent.workspace
    print("banner, cache hit:", timed(lambda: credit_banner(workspace=workspace), args.repeat * 10))

    def miss() -> None:
        cache.delete(_key(workspace.pk, scope.last_day.replace(day=1)))
        credit_banner(workspace=workspace)

    print("banner, cache miss (one sum of the month):", timed(miss, args.repeat))
    print("load average after:", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
