"""Profile GET /v1/runs in process and print where the time goes (cProfile).

    uv run python benchmarks/profile_request.py [--requests 500] [--runs 2000] [--page first|deep|100]
        [--build ours|stock] [--sort cumulative|tottime] [--top 40] [--save var/profile.pstats]

Fills a small database of its own (PROFILE_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_profile; the runs are generated as for
`benchmarks/api_lists.py`), then sends the requests through Django's test client — every
middleware, Bearer key authentication, scopes and the rate limiter on Redis (REDIS_URL, default
redis://127.0.0.1:6379/7; the limit is raised so it never refuses) — and prints the functions
with the most cumulative time, the request's SQL queries, and the time per request with and
without the profiler. `--build stock` profiles the stock DRF build of
`benchmarks/stock_drf_settings.py` over the same rows instead. Save with `--save` and open the
file in snakeviz or `python -m pstats` to dig further.
"""

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_profile"
SETTINGS = {"ours": "config.settings", "stock": "benchmarks.stock_drf_settings"}


def paths(build: str, deep_cursor: str, stock_deep_cursor: str) -> dict[str, str]:
    if build == "stock":
        return {
            "first": "/v1/runs",
            "deep": f"/v1/runs?cursor={stock_deep_cursor}",
            "100": "/v1/runs?page_size=100",
        }
    return {
        "first": "/v1/runs?limit=20",
        "deep": f"/v1/runs?limit=20&after={deep_cursor}",
        "100": "/v1/runs?limit=100",
    }


def profile(args) -> None:
    """Runs in a child whose settings module is the build under test."""
    import warnings

    import django

    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic here

    django.setup()
    from django.db import connection
    from django.test import Client

    from benchmarks.api_lists import prepare, stock_cursor

    key, deep_cursor = prepare(args.runs)
    path = paths(args.build, deep_cursor, stock_cursor(args.runs))[args.page]
    client = Client()
    headers = {"Authorization": f"Bearer {key}"}

    def one() -> None:
        response = client.get(path, headers=headers)
        if response.status_code != 200:
            raise SystemExit(f"GET {path}: {response.status_code} {response.content[:300]!r}")

    for _ in range(max(20, args.requests // 10)):
        one()  # warm: key cache, compiled regexes, connections
    queries: list[str] = []

    def record(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        one()

    started = time.perf_counter()
    for _ in range(args.requests):
        one()
    plain_ms = (time.perf_counter() - started) / args.requests * 1000

    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(args.requests):
        one()
    profiler.disable()
    profiled_ms = (time.perf_counter() - started) / args.requests * 1000

    print(f"GET {path[:80]}  ({args.build} build, {args.runs:,} runs, {args.requests} requests)")
    print(f"  {plain_ms:.2f} ms per request without the profiler, {profiled_ms:.2f} ms with it")
    print(f"  SQL per request: {len(queries)}")
    for sql in queries:
        print(f"    {sql[:150]}")
    if args.save:
        Path(args.save).parent.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(args.save)
        print(f"  profile saved to {args.save}")
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(args.sort)
    stats.print_stats(args.top)
    # pstats totals are for all requests: the header says how many calls; divide by --requests.
    print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--page", choices=["first", "deep", "100"], default="first")
    parser.add_argument("--build", choices=sorted(SETTINGS), default="ours")
    parser.add_argument("--sort", choices=["cumulative", "tottime", "ncalls"], default="cumulative")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--save", help="write the raw profile (pstats format) here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        profile(args)
        return
    database_url = os.environ.get("PROFILE_DATABASE_URL", DEFAULT_URL)
    ensure_database(database_url)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
        "DJANGO_SETTINGS_MODULE": SETTINGS[args.build],
        "API_RATE_LIMIT": "100000000/minute",
        "LOG_LEVEL": "WARNING",
        "DEBUG": "0",
        "PYTHONPATH": str(ROOT),
    }
    # A child process, so that the settings module is chosen before Django is imported.
    subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]], env=env, check=True)


if __name__ == "__main__":
    main()
