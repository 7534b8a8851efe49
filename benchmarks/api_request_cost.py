"""CPU cost of one GET /v1/runs in process, ours against the stock DRF build.

    uv run python benchmarks/api_request_cost.py [--requests 200] [--repeats 5]

wrk figures on a shared 2-core machine swing by a factor of two from one minute to the next;
the time one request takes in a single process (Django's test client, no network) moves far
less, so it is the figure to compare builds with. Run `benchmarks/api_lists.py` first: it fills
the benchmark database (BENCH_DATABASE_URL) with the runs this script reads.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_bench"
BUILDS = {
    "ours (key auth, scope, rate limit)": ("config.settings", "/v1/runs?limit=20"),
    "stock DRF CursorPagination": ("benchmarks.stock_drf_settings", "/v1/runs"),
}


def measure(requests: int, repeats: int) -> None:
    """Runs inside a child process whose settings module is the build under test."""
    import django

    django.setup()
    from django.test import Client

    from apps.workspaces.models import Agent
    from apps.workspaces.services import api_key_create

    _, raw = api_key_create(
        agent=Agent.objects.get(pk="agt_bench"), name="request cost", scopes=["runs:read"]
    )
    client = Client()
    headers = {"Authorization": f"Bearer {raw}"}
    path = os.environ["BENCH_PATH"]
    assert client.get(path, headers=headers).status_code == 200
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(requests):
            client.get(path, headers=headers)
        samples.append((time.perf_counter() - started) / requests * 1000)
    print(f"{statistics.median(samples):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure(args.requests, args.repeats)
        return
    print("GET /v1/runs, one process, median ms per request")
    for label, (settings_module, path) in BUILDS.items():
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": settings_module,
            "DATABASE_URL": os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL),
            "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
            "API_RATE_LIMIT": "100000000/minute",
            "LOG_LEVEL": "WARNING",
            "BENCH_PATH": path,
            "PYTHONPATH": str(ROOT),
        }
        output = subprocess.run(
            [sys.executable, __file__, "--child", f"--requests={args.requests}",
             f"--repeats={args.repeats}"],
            env=env, cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        print(f"  {label:40} {output.strip().splitlines()[-1]} ms")


if __name__ == "__main__":
    main()
