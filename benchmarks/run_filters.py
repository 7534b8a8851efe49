"""The filters of GET /v1/runs and GET /v1/conversations at N runs: each alone and two combined.

    nice -n 10 uv run python benchmarks/run_filters.py [--runs 1000000] [--requests 40]
        [--warmup 5]

A dedicated PostgreSQL database (BENCH_FILTERS_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_filters) holds one Agent's N runs over 400
days, ten runs per conversation, 1,000 end users, filled set-based (`generate_series`, one
statement per table; kept for the next run when the count is already there). Each run has the
dimensions of issue 36 spread so that the filtered values are common and rare alike:

- environment production / staging / dev (80 / 15 / 5 %), release one of 50 (2 %),
- tags: `vip` on 1 % of runs, `beta` on 30 %, metadata `tier` gold / free (10 / 90 %) and a
  `seats` number,
- model one of 3, tool `search_knowledge` on a third, status failed on 20 %, the failed runs'
  error code `tool_error`, or `TimeoutError` for 0.1 % of all runs;

each drawn independently (a hash of the run number and a salt per dimension), as the planner
assumes they are.

Each case is requested `--requests` times (after `--warmup`, five, warm-up requests) through
Django's test client — key authentication, the Redis rate limiter and the compiled list SQL, as
a request from outside gets them, without a socket — and the p50 / p95 in milliseconds are
printed with the row count the first page returned.
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

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_filters"
AGENT = "agt_filters"
RUN_AT = "%(anchor)s::timestamptz - (g - 1)::float8 / %(n)s * interval '400 days'"

RUN_CASES = [
    ("no filter", {}),
    ("environment=production", {"environment": "production"}),
    ("environment=dev", {"environment": "dev"}),
    ("release=r7", {"release": "r7"}),
    ("tag=vip", {"tag": "vip"}),
    ("tag=beta", {"tag": "beta"}),
    ("metadata=tier:gold", {"metadata": "tier:gold"}),
    ("model_id", {"model_id": "claude-sonnet-4"}),
    ("tool_name", {"tool_name": "search_knowledge"}),
    ("status=failed", {"status": "failed"}),
    ("error_code=TimeoutError (rare)", {"error_code": "TimeoutError"}),
    ("user_id", {"user_id": "usr_f7"}),
    ("created_after/before (a day)", {"created_after": "-200d", "created_before": "-199d"}),
    ("environment + release", {"environment": "production", "release": "r7"}),
    ("environment + tag=vip", {"environment": "production", "tag": "vip"}),
    ("release + status", {"release": "r7", "status": "failed"}),
    ("metadata + model", {"metadata": "tier:gold", "model_id": "claude-sonnet-4"}),
    ("tag=vip + error_code", {"tag": "vip", "error_code": "tool_error"}),
    ("environment=dev + a day", {"environment": "dev", "created_after": "-200d",
                                 "created_before": "-199d"}),
]  # fmt: skip
CONVERSATION_CASES = [
    ("no filter", {}),
    ("environment=production", {"environment": "production"}),
    ("release=r7", {"release": "r7"}),
    ("tag=vip", {"tag": "vip"}),
    ("metadata=tier:gold", {"metadata": "tier:gold"}),
    ("model_id", {"model_id": "claude-sonnet-4"}),
    ("tool_name", {"tool_name": "search_knowledge"}),
    ("error_code=tool_error", {"error_code": "tool_error"}),
    ("user_id", {"user_id": "usr_f7"}),
    ("status=failed", {"status": "failed"}),
    ("environment + release", {"environment": "production", "release": "r7"}),
    ("tag=vip + model_id", {"tag": "vip", "model_id": "claude-sonnet-4"}),
    ("user_id + environment", {"user_id": "usr_f7", "environment": "production"}),
]  # fmt: skip


def fill(runs: int) -> None:
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM activity_run WHERE agent_id = %s", [AGENT])
        if cursor.fetchone()[0] == runs:
            print(f"{runs:,} runs already there", flush=True)
            return
    from apps.workspaces.models import Agent, Workspace

    workspace, _ = Workspace.objects.get_or_create(id="ws_filters", defaults={"name": "Filters"})
    Agent.objects.get_or_create(id=AGENT, defaults={"workspace": workspace, "name": "Filters"})
    started = time.monotonic()
    params = {"n": runs, "anchor": timezone.now(), "agent": AGENT}
    with transaction.atomic(), connection.cursor() as cursor:
        for table in ("activity_message", "activity_run", "activity_conversation",
                      "activity_enduser"):  # fmt: skip
            cursor.execute(f"DELETE FROM {table} WHERE agent_id = %s", [AGENT])
        # pg_temp.h(g, salt): an independent pseudo-random number per run and salt, so two filters'
        # values are as independent in the data as the planner assumes.
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pg_temp.h(g bigint, salt text) RETURNS bigint "
            "LANGUAGE sql IMMUTABLE AS $$ SELECT abs(hashtext(salt || g)::bigint) $$"
        )
        cursor.execute(
            "INSERT INTO activity_enduser (id, agent_id, identity_type, first_seen_at, "
            "last_seen_at) SELECT 'usr_f' || u, %(agent)s, 'user', %(anchor)s, %(anchor)s "
            "FROM generate_series(0, 999) u",
            params,
        )
        cursor.execute(
            "INSERT INTO activity_conversation (id, agent_id, user_id, title, status, source, "
            "created_at, updated_at) SELECT 'conv_f' || c, %(agent)s, 'usr_f' || (c %% 1000), "
            "'Chat ' || c, 'completed', 'embed', "
            + RUN_AT.replace("g - 1", "10 * c + 9")
            + ", "
            + RUN_AT.replace("g - 1", "10 * c")
            + " + interval '3 seconds' FROM generate_series(0, %(n)s / 10 - 1) c",
            params,
        )
        cursor.execute(
            "INSERT INTO activity_run (id, agent_id, conversation_id, user_id, request_id, "
            "status, model_id, sdk_version, protocol_version, input_tokens, output_tokens, "
            "total_tokens, cache_read_tokens, cache_write_tokens, credits_charged, tool_names, "
            "failed_tool_names, component_kinds, document_ids, error_code, first_chunk_at, "
            "completed_at, total_turn_latency_ms, created_at, updated_at, environment, release, "
            "tags, metadata) "
            "SELECT 'run_f' || g, %(agent)s, 'conv_f' || ((g - 1) / 10), "
            "'usr_f' || (((g - 1) / 10) %% 1000), 'req_' || g, "
            "CASE WHEN pg_temp.h(g, 's') %% 5 = 3 THEN 'failed' "
            "WHEN pg_temp.h(g, 's') %% 50 = 1 THEN 'aborted' ELSE 'completed' END, "
            "(ARRAY['gpt-4.1-mini','claude-sonnet-4','gemini-2.5-flash'])[pg_temp.h(g, 'm') %% 3 + 1], "
            "'5.0.12', 1, 1200, 200 + pg_temp.h(g, 'o') %% 400, 1400 + pg_temp.h(g, 'o') %% 400, "
            "0, 0, (pg_temp.h(g, 'c') %% 1000) / 997.0, "
            "CASE WHEN pg_temp.h(g, 'k') %% 3 = 0 THEN '[\"search_knowledge\"]' ELSE '[]' END::jsonb, "
            "CASE WHEN pg_temp.h(g, 'k') %% 3 = 0 AND pg_temp.h(g, 's') %% 5 = 3 "
            "THEN '[\"search_knowledge\"]' ELSE '[]' END::jsonb, '[]', '[]', CASE WHEN pg_temp.h(g, 's') %% 5 <> 3 THEN NULL "
            "WHEN pg_temp.h(g, 'x') %% 200 = 0 THEN 'TimeoutError' ELSE 'tool_error' END, "
            + RUN_AT
            + ", "
            + RUN_AT
            + " + interval '2 seconds', 300 + pg_temp.h(g, 'l') %% 9000, "
            + RUN_AT
            + ", "
            + RUN_AT
            + ", CASE WHEN pg_temp.h(g, 'e') %% 20 < 16 THEN 'production' WHEN pg_temp.h(g, 'e') %% 20 < 19 "
            "THEN 'staging' ELSE 'dev' END, 'r' || (pg_temp.h(g, 'r') %% 50), "
            "(CASE WHEN pg_temp.h(g, 'v') %% 100 = 7 THEN '[\"vip\"]' ELSE '[]' END)::jsonb "
            "|| (CASE WHEN pg_temp.h(g, 'b') %% 10 < 3 THEN '[\"beta\"]' ELSE '[]' END)::jsonb, "
            "jsonb_build_object('tier', CASE WHEN pg_temp.h(g, 't') %% 10 = 1 THEN 'gold' ELSE 'free' "
            "END, 'seats', pg_temp.h(g, 'n') %% 40) "
            "FROM generate_series(1, %(n)s) g",
            params,
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE activity_run")
        cursor.execute("VACUUM ANALYZE activity_conversation")
    print(f"filled {runs:,} runs in {time.monotonic() - started:.0f} s", flush=True)


TOOLS = (
    "ARRAY['search_knowledge','get_weather','send_email','create_ticket','lookup_order',"
    "'run_sql','fetch_url','calendar']"
)
# Each run's ten steps: three model calls, five tool calls, a retrieval and a custom step.
STEP_KINDS = (
    "ARRAY['model','tool','tool','tool','model','tool','tool','retrieval','custom','model']"
)


def fill_steps(runs: int, per_run: int, chunk: int = 50_000) -> None:
    """`per_run` steps for each run (set-based, `chunk` runs a statement, each committed, so a
    cut fill resumes): kinds by position, tools one of eight, 2 % of tool calls failed, a
    duration spread over two orders of magnitude."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM activity_runstep WHERE agent_id = %s", [AGENT])
        have = cursor.fetchone()[0]
    if have == runs * per_run or per_run == 0:
        return
    started = time.monotonic()
    with connection.cursor() as cursor:
        if have > runs * per_run or have % per_run:  # another fill's: made again
            cursor.execute("DELETE FROM activity_runstep WHERE agent_id = %s", [AGENT])
            have = 0
        cursor.execute(
            "CREATE OR REPLACE FUNCTION pg_temp.h(g bigint, salt text) RETURNS bigint "
            "LANGUAGE sql IMMUTABLE AS $$ SELECT abs(hashtext(salt || g)::bigint) $$"
        )
    for low in range(have // per_run + 1, runs + 1, chunk):
        high = min(runs, low + chunk - 1)
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO activity_runstep (id, agent_id, run_id, trace_id, kind, name, "
                "status, error, started_at, ended_at, duration_ms, model_id, tool_name, "
                "documents, attributes, truncated, input_tokens, output_tokens, total_tokens, "
                "created_at, updated_at) "
                "SELECT 'step_f' || g || '_' || k, %(agent)s, 'run_f' || g, NULL, kind, "
                "CASE kind WHEN 'tool' THEN tool WHEN 'model' THEN 'generate' "
                "WHEN 'retrieval' THEN 'knowledge' ELSE 'plan' END, "
                "CASE WHEN kind = 'tool' AND pg_temp.h(g * 16 + k, 'f') %% 50 = 0 "
                "THEN 'failed' ELSE 'completed' END, NULL, at, at + duration, "
                "extract(epoch FROM duration) * 1000, "
                "CASE WHEN kind = 'model' THEN (ARRAY['gpt-4.1-mini','claude-sonnet-4',"
                "'gemini-2.5-flash'])[pg_temp.h(g, 'm') %% 3 + 1] END, "
                "CASE WHEN kind = 'tool' THEN tool END, '[]', '{}', '[]', "
                "CASE WHEN kind = 'model' THEN 400 END, CASE WHEN kind = 'model' THEN 70 END, "
                "CASE WHEN kind = 'model' THEN 470 END, at, at "
                "FROM generate_series(%(low)s, %(high)s) g, generate_series(0, %(k)s) k, "
                "LATERAL (SELECT " + RUN_AT + " + k * interval '150 ms' AS at, "
                "(" + STEP_KINDS + ")[k %% 10 + 1] AS kind, "
                "(" + TOOLS + ")[pg_temp.h(g * 16 + k, 't') %% 8 + 1] AS tool, "
                "(20 + pg_temp.h(g * 16 + k, 'd') %% 2000) * interval '1 ms' AS duration) s",
                {"agent": AGENT, "n": runs, "anchor": _anchor(), "low": low, "high": high,
                 "k": per_run - 1},
            )  # fmt: skip
        print(f"  steps of runs {low:,}-{high:,}", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE activity_runstep")
    print(f"filled {runs * per_run:,} steps in {time.monotonic() - started:.0f} s", flush=True)


def _anchor():
    """The fill's `now`: the newest run's time, so the steps line up with their runs."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT max(created_at) FROM activity_run WHERE agent_id = %s", [AGENT])
        return cursor.fetchone()[0]


def _concrete(params: dict) -> dict:
    """Relative days (`-200d`) as dates."""
    from datetime import timedelta

    from django.utils import timezone

    out = {}
    for name, value in params.items():
        if isinstance(value, str) and value.startswith("-") and value.endswith("d"):
            value = (timezone.now() - timedelta(days=int(value[1:-1]))).date().isoformat()
        out[name] = value
    return out


def measure(path: str, cases: list, requests: int, key: str, warmup: int = 5) -> None:
    from django.test import Client

    client = Client()
    headers = {"Authorization": f"Bearer {key}"}
    print(f"\nGET {path}                      p50 ms   p95 ms   rows", flush=True)
    for label, params in cases:
        query = _concrete(params)
        samples = []
        rows = 0
        for index in range(requests + warmup):
            started = time.perf_counter()
            response = client.get(path, query, headers=headers)
            elapsed = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, (label, response.content[:300])
            rows = len(response.json()["data"])
            if index >= warmup:
                samples.append(elapsed)
        samples.sort()
        p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
        print(f"  {label:34} {statistics.median(samples):7.1f} {p95:8.1f} {rows:6}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5, help="requests before each case's")
    parser.add_argument("--steps-per-run", type=int, default=10)
    parser.add_argument("--fill-only", action="store_true")
    args = parser.parse_args()
    benchmark_environment(os.environ.get("BENCH_FILTERS_DATABASE_URL", DEFAULT_URL))
    import django

    django.setup()
    fill(args.runs)
    fill_steps(args.runs, args.steps_per_run)
    if args.fill_only:
        return
    from apps.workspaces.models import Agent
    from apps.workspaces.services import api_key_create

    _, key = api_key_create(
        agent=Agent.objects.get(pk=AGENT), name="bench", scopes=["runs:read", "conversations:read"]
    )
    print(f"{args.runs:,} runs, {args.runs // 10:,} conversations; load {os.getloadavg()[0]:.1f}")
    measure("/v1/runs", RUN_CASES, args.requests, key, args.warmup)
    measure("/v1/conversations", CONVERSATION_CASES, args.requests, key, args.warmup)


if __name__ == "__main__":
    main()
