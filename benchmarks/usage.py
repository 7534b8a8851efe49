"""Benchmark GET /v1/usage over N runs (default 1,000,000): p50/p95 per request, in process.

    uv run python benchmarks/usage.py [--runs 1000000] [--agents 5] [--days 120] [--requests 200]

Fills a dedicated PostgreSQL database (BENCH_USAGE_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_usage_bench) with one workspace's runs spread
over several Agents and days using generate_series, builds the rollup with the rebuild
(`manage.py usage_rebuild`'s SQL), then times requests through Django's test client with key
authentication, the scope check and the Redis rate limiter on (the limit raised so it never
refuses). Closed months are sealed first, as beat's hourly usage.seal_months does
(apps.usage.tiers). Also checks that the answer equals the sums over the runs. The target is
p95 <= 50 ms for any period up to a year.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import benchmark_environment  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_usage_bench"


def prepare(runs: int, agents: int, days: int) -> str:
    """Migrate, fill runs and the rollup (unless already there); returns a raw API key."""
    from django.core.management import call_command
    from django.db import connection

    from apps.activity.models import Run
    from apps.usage.rollup import rollup_rebuild
    from apps.usage.tiers import months_seal
    from apps.workspaces.models import Agent, Workspace
    from apps.workspaces.services import api_key_create

    call_command("migrate", verbosity=0)
    workspace, _ = Workspace.objects.get_or_create(id="ws_usage_bench", defaults={"name": "Bench"})
    agent_ids = [f"agt_usage_bench_{i}" for i in range(agents)]
    for agent_id in agent_ids:
        Agent.objects.get_or_create(
            id=agent_id, defaults={"workspace": workspace, "name": f"Bench Agent {agent_id[-1]}"}
        )
    have = Run.objects.filter(agent__workspace=workspace).count()
    if have != runs:
        print(f"filling {runs:,} runs over {agents} Agents and {days} days ...", flush=True)
        started = time.monotonic()
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM activity_run WHERE agent_id LIKE 'agt_usage_bench_%%'")
            cursor.execute(
                "DELETE FROM activity_conversation WHERE agent_id LIKE 'agt_usage_bench_%%'"
            )
            cursor.execute(
                "INSERT INTO activity_conversation (id, agent_id, title, status, source, "
                "created_at, updated_at) SELECT 'conv_ubench_' || g, "
                "'agt_usage_bench_' || (g %% %s), 'Chat ' || g, 'completed', 'embed', now(), "
                "now() FROM generate_series(0, 999) g",
                [agents],
            )
            # Run g belongs to Agent g % agents and conversation g % 1000; the usage figures do
            # not look at conversations, so their Agent need not match.
            cursor.execute(
                "INSERT INTO activity_run (id, agent_id, conversation_id, request_id, status, "
                "model_id, sdk_version, protocol_version, input_tokens, output_tokens, "
                "total_tokens, cache_read_tokens, cache_write_tokens, credits_charged, "
                "tool_names, failed_tool_names, component_kinds, completed_at, "
                "total_turn_latency_ms, created_at, updated_at) "
                "SELECT 'run_ubench_' || lpad(g::text, 8, '0'), "
                "'agt_usage_bench_' || (g %% %s), 'conv_ubench_' || (g %% 1000), 'req_' || g, "
                "(ARRAY['completed','completed','completed','failed','aborted'])[g %% 5 + 1], "
                "'gpt-4.1-mini', '5.0.12', 1, 1200 + g %% 500, 200 + g %% 90, 1400 + g %% 590, "
                "g %% 300, g %% 40, round((0.1 + (g %% 97) / 100.0)::numeric, 4), '[]', '[]', "
                "'[]', now(), 300 + (g::bigint * 7919) %% 20000, "
                "now() - (g::float / %s * %s) * interval '1 day', now() "
                "FROM generate_series(1, %s) g",
                [agents, runs, days, runs],
            )
            cursor.execute("ANALYZE activity_run")
        print(f"filled in {time.monotonic() - started:.1f} s", flush=True)
        started = time.monotonic()
        counted = rollup_rebuild(agent_ids=agent_ids)
        print(f"rollup rebuilt from {counted:,} runs in {time.monotonic() - started:.1f} s")
    # What beat's usage.seal_months does hourly: the tier of closed months.
    started = time.monotonic()
    sealed = months_seal(time_budget_seconds=3600).sealed
    print(f"sealed {sealed} closed workspace-months in {time.monotonic() - started:.1f} s")
    with connection.cursor() as cursor:
        # Fresh statistics, and the visibility map that index-only scans need (autovacuum
        # would get there too, later).
        for table in ("dailyusage", "dailylatency", "monthlylatency", "workspacedailylatency"):
            cursor.execute(f"VACUUM ANALYZE usage_{table}")
    _, raw = api_key_create(
        agent=Agent.objects.get(pk=agent_ids[0]), name="usage bench", scopes=["usage:read"]
    )
    return raw


def check_against_runs(client, headers) -> None:
    """The benchmarked answer is the right one: totals equal the sums over the runs."""
    from django.db import connection

    body = client.get("/v1/usage?from=2000-01-01&to=2000-12-31", headers=headers).json()
    assert body["totals"]["runs"] == 0
    response = client.get("/v1/usage", headers=headers).json()
    start = response["period"]["from"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), sum(total_tokens), sum(round(credits_charged::numeric, 9)) "
            "FROM activity_run WHERE agent_id LIKE 'agt_usage_bench_%%' "
            "AND created_at >= %s::date",
            [start],
        )
        runs, tokens, credits = cursor.fetchone()
    assert response["totals"]["runs"] == runs, (response["totals"]["runs"], runs)
    assert response["totals"]["tokens"]["total"] == (tokens or 0)
    assert abs(response["totals"]["credits_charged"] - float(credits or 0)) < 1e-6
    print(f"  checked: this month's {runs:,} runs, {tokens or 0:,} tokens match the runs table")


def measure(raw_key: str, requests: int) -> None:
    from django.test import Client

    client = Client()
    headers = {"Authorization": f"Bearer {raw_key}"}
    check_against_runs(client, headers)
    targets = {
        "default (this month to date, by day)": "/v1/usage",
        "90 days by week": "/v1/usage?from={d90}&granularity=week",
        "366 days by day": "/v1/usage?from={d366}",
        "one Agent, agent-scoped path": "/v1/agents/agt_usage_bench_1/usage",
    }
    from datetime import timedelta

    from django.utils import timezone

    today = timezone.now().date()
    values = {
        "d90": (today - timedelta(days=89)).isoformat(),
        "d366": (today - timedelta(days=365)).isoformat(),
    }
    for label, template in targets.items():
        path = template.format(**values)
        for _ in range(10):  # warm up: key cache, connections, compiled code
            assert client.get(path, headers=headers).status_code == 200
        samples, cpu = [], []
        for _ in range(requests):
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(path, headers=headers)
            samples.append((time.perf_counter() - started) * 1000)
            # This process's own CPU time: what the request costs us whatever the neighbours do
            # (the database's share is in the wall time only).
            cpu.append((time.process_time() - started_cpu) * 1000)
            assert response.status_code == 200
        samples.sort()
        p50 = statistics.median(samples)
        p95 = samples[int(len(samples) * 0.95) - 1]
        print(
            f"  {label:38s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  "
            f"CPU p50 {statistics.median(cpu):5.1f} ms  (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()

    database_url = os.environ.get("BENCH_USAGE_DATABASE_URL", DEFAULT_URL)
    benchmark_environment(database_url)
    import django

    django.setup()
    raw_key = prepare(args.runs, args.agents, args.days)
    print(
        f"GET /v1/usage over {args.runs:,} runs ({args.agents} Agents, {args.days} days), "
        f"in process, {args.requests} requests each; load average before: "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    measure(raw_key, args.requests)


if __name__ == "__main__":
    main()
