"""Benchmark GET /v1/runs side by side with the stock DRF build, over N runs (default 1,000,000).

    uv run python benchmarks/api_lists.py [--runs 1000000] [--rounds 3] [--seconds 15]
        [--connections 16] [--load auto|wrk|python] [--no-baseline]          (or: make bench BENCH_ARGS="--runs 100000")

Fills a dedicated PostgreSQL database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_bench) with one Agent's runs using
generate_series (seconds, not minutes), then serves it twice with the same gunicorn settings
(2 workers x 4 threads, the setup of DESIGN.md's stock-DRF figures): ours, with Bearer key
authentication, scopes and the Redis rate limiter on (the limit is raised so it never refuses),
and the stock DRF build of benchmarks/stock_drf_settings.py (ModelViewSet, ModelSerializer,
CursorPagination, no authentication). Three cases — the first page of 20, a page of 20 at a
cursor in the middle, a page of 100 — are loaded with wrk (16 connections; without wrk, a
threaded Python loop) in interleaved rounds: for each case, ours then stock, then the next
case, and the whole again `--rounds` times, so a neighbour's burst of load hits both builds
alike. Prints every measurement, then per case the median req/s of each build, their ratio,
the range of the paired per-round ratios, p99 latency, and the machine's load average before
and during the run."""

import argparse
import os
import re
import shutil
import signal
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

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_bench"


def prepare(runs: int) -> tuple[str, str]:
    """Migrate, create the Agent and a key, fill runs; returns (raw key, deep cursor)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from apps.activity.models import Run
    from apps.activity.selectors import RUN_KEYSET
    from apps.common.keyset import cursor_encode
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
    return raw, cursor_encode(RUN_KEYSET, middle.created_at, middle.id)


def wait_until_up(url: str, headers: dict, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
                last = response.status
        except OSError as error:
            last = error
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer 200 at {url}: {last}")


def _milliseconds(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]


# wrk refuses more threads than connections ("number of connections must be >= threads").
WRK_THREADS = 2


def load_with_wrk(url: str, key: str, seconds: int, connections: int) -> tuple[float, float]:
    """(requests per second, p99 latency in ms). At most as many wrk threads as connections;
    a wrk that fails ends the benchmark with its own message."""
    command = [
        "wrk",
        f"-t{min(WRK_THREADS, connections)}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--latency",
        "-H",
        f"Authorization: Bearer {key}",
        url,
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    output = completed.stdout
    if completed.returncode != 0:
        message = (completed.stderr.strip() or output.strip() or "no output")[-2000:]
        raise SystemExit(f"wrk exited with status {completed.returncode}: {message}")
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if non_2xx:
        raise SystemExit(f"{non_2xx.group(1)} failed responses:\n{output}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p99 = _milliseconds(re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE).group(1))
    return rate, p99


def load_with_python(url: str, key: str, seconds: int, connections: int) -> tuple[float, float]:
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    deadline = time.monotonic() + seconds
    latencies: list[list[float]] = [[] for _ in range(connections)]

    def loop(index: int) -> None:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        while time.monotonic() < deadline:
            started = time.perf_counter()
            connection.request("GET", path, headers={"Authorization": f"Bearer {key}"})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"status {response.status}")
            latencies[index].append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = sorted(sum(latencies, []))
    return len(every) / seconds, every[int(len(every) * 0.99) - 1] if every else 0.0


CASES = ("first page of 20", "deep cursor (middle)", "page of 100")
BUILDS = ("ours", "stock")
BUILD_LABELS = {
    "ours": "ours (key auth, scopes, rate limit)",
    "stock": "stock DRF (ModelViewSet, CursorPagination, no auth)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3, help="seconds of load before each")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--load",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="the load generator: wrk when installed (auto), or this one",
    )
    parser.add_argument("--port", type=int, default=8765, help="ours; stock gets the next one")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="Skip the stock DRF build (ModelViewSet + CursorPagination) measured alongside.",
    )
    args = parser.parse_args()

    load_before = os.getloadavg()
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    env = benchmark_environment(database_url)
    key, deep_cursor = prepare(args.runs)

    first, deep, hundred = CASES
    targets = {
        "ours": {first: "?limit=20", deep: f"?limit=20&after={deep_cursor}", hundred: "?limit=100"},
        "stock": {first: "", deep: f"?cursor={stock_cursor(args.runs)}", hundred: "?page_size=100"},
    }
    builds = BUILDS[:1] if args.no_baseline else BUILDS
    settings_modules = {"ours": "config.settings", "stock": "benchmarks.stock_drf_settings"}
    ports = {"ours": args.port, "stock": args.port + 1}
    if args.connections < 1:
        parser.error("--connections must be at least 1")
    use_wrk = args.load == "wrk" or (args.load == "auto" and shutil.which("wrk") is not None)
    if use_wrk and shutil.which("wrk") is None:
        parser.error("--load wrk: wrk is not installed (make bench installs it)")
    tool = "wrk" if use_wrk else "python loop (install wrk for real figures)"
    load = load_with_wrk if use_wrk else load_with_python
    print(
        f"GET /v1/runs over {args.runs:,} runs, gunicorn 2 workers x 4 threads each, {tool}, "
        f"{args.connections} connections, {args.rounds} interleaved rounds of "
        f"{args.warmup} s warm-up + {args.seconds} s, {os.cpu_count()} CPUs"
    )
    print(f"load average before: {' / '.join(f'{v:.2f}' for v in load_before)} (1/5/15 min)")
    servers = {}
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    loads: list[float] = []
    try:
        for build in builds:
            servers[build] = start_server(
                {**env, "DJANGO_SETTINGS_MODULE": settings_modules[build]}, ports[build]
            )
        for build in builds:
            base = f"http://127.0.0.1:{ports[build]}/v1/runs"
            wait_until_up(base + targets[build][CASES[0]], {"Authorization": f"Bearer {key}"})
        for round_number in range(1, args.rounds + 1):
            for case in CASES:
                for build in builds:
                    url = f"http://127.0.0.1:{ports[build]}/v1/runs{targets[build][case]}"
                    if args.warmup:
                        load(url, key, args.warmup, args.connections)  # warm up every thread
                    rate, p99 = load(url, key, args.seconds, args.connections)
                    loads.append(os.getloadavg()[0])
                    results.setdefault((case, build), []).append((rate, p99))
                    print(
                        f"  round {round_number}  {case:22s} {build:5s} {rate:8.1f} req/s  "
                        f"p99 {p99:6.1f} ms  load {loads[-1]:.2f}",
                        flush=True,
                    )
    finally:
        for server in servers.values():
            server.send_signal(signal.SIGTERM)
        for server in servers.values():
            server.wait(timeout=20)
    print_table(results, builds)
    print(
        f"load average (1 min) during the run: {min(loads):.2f} - {max(loads):.2f} "
        f"(wrk, gunicorn, PostgreSQL and Redis of this run included); "
        f"before: {load_before[0]:.2f}"
    )


def print_table(results: dict, builds: tuple[str, ...]) -> None:
    print()
    for build in builds:
        print(f"  {build}: {BUILD_LABELS[build]}")
    header = f"{'case':22s} {'ours req/s':>11s}"
    if len(builds) == 2:
        header += f" {'stock req/s':>12s} {'ratio':>7s} {'per round':>13s}"
        header += f" {'ours p99':>9s} {'stock p99':>10s}"
    else:
        header += f" {'ours p99':>9s}"
    print(header)
    for case in CASES:
        ours = results[(case, "ours")]
        line = f"{case:22s} {statistics.median(r for r, _ in ours):11.1f}"
        ours_p99 = statistics.median(p for _, p in ours)
        if len(builds) == 2:
            stock = results[(case, "stock")]
            ratio = statistics.median(r for r, _ in ours) / statistics.median(r for r, _ in stock)
            paired = [o / s for (o, _), (s, _) in zip(ours, stock, strict=True)]
            line += f" {statistics.median(r for r, _ in stock):12.1f} {ratio:6.2f}x"
            line += f" {min(paired):5.2f}-{max(paired):.2f}x"
            line += f" {ours_p99:6.1f} ms {statistics.median(p for _, p in stock):7.1f} ms"
        else:
            line += f" {ours_p99:6.1f} ms"
        print(line)
    print("(medians over the rounds; ratio = ours / stock; per round = paired ratios' range)")


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


def start_server(env: dict, port: int) -> subprocess.Popen:
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "api_lists_gunicorn.log"
    with open(log, "a") as stderr:
        return subprocess.Popen(
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
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
            ],  # fmt: skip
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


if __name__ == "__main__":
    main()
