"""Issue 36's targets at scale: runs filters through the API and the console, step analytics,
and the console Overview, over N runs with ten steps each (default 1,000,000 and 10,000,000).

    nice -n 10 uv run python benchmarks/activity_scale.py [--runs 1000000] [--steps-per-run 10]
        [--requests 30] [--warmup 5] [--only api,console,analytics,overview]

The database and its fill are run_filters.py's (BENCH_FILTERS_DATABASE_URL; one Agent's runs
over 400 days with every dimension spread, then `--steps-per-run` steps per run: three model
calls, five tool calls of eight tools, a retrieval and a custom step), set-based and kept for
the next run. The analytics rollup (steps and runs, with the Overview's groups) is computed
once from the rows with its SQL rebuild, as the migration does for runs recorded before it.

Each case is asked `--requests` times after `--warmup` (five) warm-up requests, in process through Django's
test client — API key authentication and the rate limiter for `/v1`, a signed-in workspace
owner and the whole page rendered for the console — and its p50 / p95 in milliseconds printed:

- `api`: every filter of GET /v1/runs and GET /v1/conversations, alone and two combined;
- `console`: the same filters on the console's Runs page;
- `analytics`: GET /v1/analytics/steps by tool, model and name for 30 days, by tool for a
  year, by tool by day; GET /v1/analytics/runs by release; the Performance page;
- `overview`: the Overview page for 7, 30, 90 and 365 days, and filtered by model, status,
  both, and one end user.

The load average is printed before and after: on a shared machine, say it with the figures.
"""

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import run_filters  # noqa: E402 - after the path is set
from benchmarks.databases import benchmark_environment  # noqa: E402

AGENT = run_filters.AGENT


def rollup_fill() -> None:
    """The rollup of the filled rows, unless it already counts them all."""
    from django.db import connection

    from apps.activity.rollup_rebuild import rollup_rebuild_sql

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM activity_run WHERE agent_id = %(a)s), "
            "(SELECT count(*) FROM activity_runstep WHERE agent_id = %(a)s), "
            "(SELECT coalesce(sum(count), 0) FROM activity_rollup WHERE agent_id = %(a)s "
            "AND \"group\" = 'ov_run'), (SELECT coalesce(sum(count), 0) FROM activity_rollup "
            "WHERE agent_id = %(a)s AND \"group\" = 'name')",
            {"a": AGENT},
        )
        runs, steps, counted_runs, counted_steps = cursor.fetchone()
    if (runs, steps) == (counted_runs, counted_steps):
        return
    started = time.monotonic()
    rollup_rebuild_sql([AGENT])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE activity_rollup")
        cursor.execute("VACUUM ANALYZE activity_rolluplatency")
    print(f"rollup of {runs:,} runs and {steps:,} steps in {time.monotonic() - started:.0f} s")


def timed_get(
    client, label: str, path: str, params: dict, requests: int, warmup: int, **headers
) -> None:
    samples = []
    for index in range(requests + warmup):
        started = time.perf_counter()
        response = client.get(path, params, headers=headers)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (label, response.status_code, response.content[:300])
        if index >= warmup:
            samples.append(elapsed)
    samples.sort()
    p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
    print(f"  {label:40} {statistics.median(samples):7.1f} {p95:8.1f}", flush=True)


def owner_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.workspaces.models import Agent, Membership

    workspace_id = Agent.objects.values_list("workspace_id", flat=True).get(pk=AGENT)
    user, _ = get_user_model().objects.get_or_create(
        username="bench-owner", defaults={"email": "bench-owner@example.com"}
    )
    Membership.objects.get_or_create(
        workspace_id=workspace_id, user=user, defaults={"role": Membership.Role.OWNER}
    )
    client = Client()
    client.force_login(user)
    return client


def console_params(params: dict) -> dict:
    """The API cases as the console's Runs page takes them (`from`/`to` days)."""
    out = {"agent": AGENT}
    for name, value in run_filters._concrete(params).items():
        out[{"created_after": "from", "created_before": "to"}.get(name, name)] = value
    return out


def analytics_cases(today) -> list:
    year = {"from": (today - timedelta(days=365)).isoformat(), "to": today.isoformat()}
    return [
        ("steps by tool, 30 days", "/v1/analytics/steps", {"group": "tool"}),
        ("steps by model, 30 days", "/v1/analytics/steps", {"group": "model"}),
        ("steps by name, 30 days", "/v1/analytics/steps", {"group": "name"}),
        ("steps by tool, 30 days, by day", "/v1/analytics/steps",
         {"group": "tool", "by_day": "true"}),
        ("steps by tool, 366 days", "/v1/analytics/steps", {"group": "tool", **year}),
        ("runs by release, 30 days", "/v1/analytics/runs", {"group": "release"}),
    ]  # fmt: skip


def overview_cases(today) -> list:
    year = {"from": (today - timedelta(days=364)).isoformat(), "to": today.isoformat()}
    return [
        ("7 days", {"days": 7}),
        ("30 days", {"days": 30}),
        ("90 days", {"days": 90}),
        ("365 days", year),
        ("30 days, model", {"days": 30, "model_id": "claude-sonnet-4"}),
        ("30 days, status=failed", {"days": 30, "status": "failed"}),
        ("365 days, model", {**year, "model_id": "claude-sonnet-4"}),
        ("365 days, model + status", {**year, "model_id": "claude-sonnet-4", "status": "failed"}),
        ("365 days, one end user", {**year, "user_id": "usr_f7"}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--steps-per-run", type=int, default=10)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5, help="requests before each case's")
    parser.add_argument("--only", default="api,console,analytics,overview")
    args = parser.parse_args()
    only = set(args.only.split(","))
    benchmark_environment(os.environ.get("BENCH_FILTERS_DATABASE_URL", run_filters.DEFAULT_URL))
    import django

    django.setup()
    from django.utils import timezone

    from apps.workspaces.models import Agent
    from apps.workspaces.services import api_key_create

    print("load average before:", " ".join(f"{v:.2f}" for v in os.getloadavg()), flush=True)
    run_filters.fill(args.runs)
    run_filters.fill_steps(args.runs, args.steps_per_run)
    rollup_fill()
    _, key = api_key_create(
        agent=Agent.objects.get(pk=AGENT), name="bench", scopes=["runs:read", "conversations:read"]
    )
    steps = args.runs * args.steps_per_run
    print(f"{args.runs:,} runs, {steps:,} steps; milliseconds p50 / p95", flush=True)
    if "api" in only:
        for path, cases in (
            ("/v1/runs", run_filters.RUN_CASES),
            ("/v1/conversations", run_filters.CONVERSATION_CASES),
        ):
            run_filters.measure(path, cases, args.requests, key, args.warmup)
    client = owner_client()
    if "console" in only:
        print("\nconsole Runs page (rendered)", flush=True)
        for label, params in run_filters.RUN_CASES:
            timed_get(client, label, "/runs/", console_params(params), args.requests, args.warmup)
    today = timezone.now().date()
    if "analytics" in only:
        print("\nanalytics", flush=True)
        for label, path, params in analytics_cases(today):
            timed_get(client, label, path, params, args.requests, args.warmup,
                      Authorization=f"Bearer {key}")  # fmt: skip
        timed_get(client, "Performance page, 30 days by tool", "/performance/",
                  {"agent": AGENT, "group": "tool"}, args.requests, args.warmup)  # fmt: skip
    if "overview" in only:
        print("\nconsole Overview page (rendered)", flush=True)
        for label, params in overview_cases(today):
            timed_get(client, label, "/overview/", {"agent": AGENT, **params}, args.requests,
                      args.warmup)  # fmt: skip
    print("load average after:", " ".join(f"{v:.2f}" for v in os.getloadavg()), flush=True)


if __name__ == "__main__":
    main()
