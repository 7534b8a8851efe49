"""Benchmark GET /v1/runs: the first page and a deep cursor, over N runs (default 1,000,000).

    uv run python benchmarks/api_lists.py [--runs 1000000] [--seconds 15] [--connections 16]

Fills a dedicated PostgreSQL database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_bench) with one Agent's runs using
generate_series (seconds, not minutes), starts gunicorn with 2 workers x 4 threads (the setup
of DESIGN.md's stock-DRF figures: LimitOffset 40 req/s, CursorPagination ~330 req/s), and
loads it with wrk (16 connections) or, without wrk, a threaded Python loop. Authentication,
scopes and rate limiting stay on (the limit is raised so it never refuses).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_bench"


def prepare(runs: int) -> tuple[str, str]:
    """Migrate, create the Agent and a key, fill runs; returns (raw key, deep cursor)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from apps.activity.models import Run
    from apps.activity.selectors import RUN_KEYSET
    from apps.common.keyset import _encode
    from apps.workspaces.models import Agent, Workspace
    from apps.workspaces.services import api_key_create

    call_command("migrate", verbosity=0)
    workspace, _ = Workspace.objects.get_or_create(id="ws_bench", defaults={"name": "Bench"})
    agent, _ = Agent.objects.get_or_create(
        id="agt_bench", defaults={"workspace": workspace, "name": "Bench Agent"}
    )
    have = Run.objects.filter(agent=agent).count()
    if have != runs:
        print(f"filling {runs:,} runs (had {have:,}) ...", flush=True)
        started = time.monotonic()
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM activity_run WHERE agent_id = 'agt_bench'")
            cursor.execute("DELETE FROM activity_conversation WHERE agent_id = 'agt_bench'")
            cursor.execute(
                "INSERT INTO activity_conversation (id, agent_id, title, status, source, "
                "created_at, updated_at) SELECT 'conv_bench_' || g, 'agt_bench', 'Chat ' || g, "
                "'completed', 'embed', now() - g * interval '1 minute', now() "
                "FROM generate_series(1, 1000) g"
            )
            cursor.execute(
                "INSERT INTO activity_run (id, agent_id, conversation_id, request_id, status, "
                "model_id, sdk_version, protocol_version, input_tokens, output_tokens, "
                "total_tokens, cache_read_tokens, cache_write_tokens, credits_charged, tool_names, "
                "failed_tool_names, component_kinds, first_chunk_at, completed_at, "
                "total_turn_latency_ms, created_at, updated_at) "
                "SELECT 'run_bench_' || lpad(g::text, 8, '0'), 'agt_bench', "
                "'conv_bench_' || (g %% 1000 + 1), 'req_' || g, "
                "(ARRAY['completed','completed','completed','failed'])[g %% 4 + 1], "
                "'gpt-4.1-mini', '5.0.12', 1, 1200 + g %% 500, 200 + g %% 90, 1400 + g %% 590, 0, 0, "
                "0.42, '[\"search_knowledge\"]', '[]', '[]', "
                "now() - g * interval '1 second', now() - g * interval '1 second', "
                "2300 + g %% 1500, now() - g * interval '1 second' - interval '2 seconds', "
                "now() - g * interval '1 second' FROM generate_series(1, %s) g",
                [runs],
            )
            cursor.execute("ANALYZE activity_run")
        print(f"filled in {time.monotonic() - started:.1f} s", flush=True)
    key, raw = api_key_create(agent=agent, name="bench", scopes=["runs:read"], created_by=None)
    middle = (
        Run.objects.filter(agent=agent).order_by(*RUN_KEYSET.order_by)[runs // 2 : runs // 2 + 1]
    ).get()
    return raw, _encode(RUN_KEYSET, middle.created_at, middle.pk)


def wait_until_up(url: str, headers: dict, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("gunicorn did not come up")


def load_with_wrk(url: str, key: str, seconds: int, connections: int) -> float:
    output = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{seconds}s",
            "-H",
            f"Authorization: Bearer {key}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if non_2xx:
        raise SystemExit(f"{non_2xx.group(1)} failed responses:\n{output}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))


def load_with_python(url: str, key: str, seconds: int, connections: int) -> float:
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    deadline = time.monotonic() + seconds
    counts = [0] * connections

    def loop(index: int) -> None:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        while time.monotonic() < deadline:
            connection.request("GET", path, headers={"Authorization": f"Bearer {key}"})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"status {response.status}")
            counts[index] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="Skip the stock DRF build (ModelViewSet + CursorPagination) measured alongside.",
    )
    args = parser.parse_args()

    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    ensure_database(database_url)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        # Production runs with Redis: rate limits and the API key cache live there.
        "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "API_RATE_LIMIT": "100000000/minute",
        "LOG_LEVEL": "WARNING",
        "DEBUG": "0",
    }
    os.environ.update(env)
    key, deep_cursor = prepare(args.runs)

    ours = {
        "first page": "?limit=20",
        "deep cursor (middle)": f"?limit=20&after={deep_cursor}",
    }
    print(
        f"GET /v1/runs over {args.runs:,} runs, gunicorn 2 workers x 4 threads, "
        f"{'wrk' if shutil.which('wrk') else 'python loop'}, {args.connections} connections"
    )
    serve_and_load("ours (key auth, scopes, rate limit)", env, ours, key, args)
    if not args.no_baseline:
        stock = {
            "first page": "",
            "deep cursor (middle)": f"?cursor={stock_cursor(args.runs)}",
        }
        stock_env = {**env, "DJANGO_SETTINGS_MODULE": "benchmarks.stock_drf_settings"}
        serve_and_load("stock DRF CursorPagination", stock_env, stock, key, args)


def stock_cursor(runs: int) -> str:
    """DRF CursorPagination's own cursor for the middle row (position = its created_at)."""
    import base64
    from urllib.parse import urlencode

    from apps.activity.models import Run

    middle = (
        Run.objects.filter(agent_id="agt_bench").order_by("-created_at", "-id")[
            runs // 2 : runs // 2 + 1
        ]
    ).get()
    query = urlencode({"p": str(middle.created_at)})
    return base64.b64encode(query.encode("ascii")).decode("ascii")


def serve_and_load(label: str, env: dict, targets: dict, key: str, args) -> None:
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "api_lists_gunicorn.log"
    with open(log, "a") as stderr:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--workers",
                "2",
                "--threads",
                "4",
                "--bind",
                f"127.0.0.1:{args.port}",
                "--log-level",
                "warning",
            ],  # fmt: skip
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    base = f"http://127.0.0.1:{args.port}/v1/runs"
    try:
        wait_until_up(base + targets["first page"], {"Authorization": f"Bearer {key}"})
        load = load_with_wrk if shutil.which("wrk") else load_with_python
        print(f"  {label}")
        for name, query in targets.items():
            load(base + query, key, 3, args.connections)  # warm up every thread
            rate = load(base + query, key, args.seconds, args.connections)
            print(f"    {name:22s} {rate:8.1f} req/s", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
