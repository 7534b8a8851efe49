"""Server time of a run's page (the trace waterfall) for 10, 100 and 500 steps.

    uv run python benchmarks/run_page.py [--requests 30] [--steps 10,100,500]

Uses a database of its own (RUN_PAGE_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_run_page; migrated on first use), makes one
owner, one Agent and a run per size whose steps are a tree (ten top-level steps each with nine
children, model/tool/custom kinds, each with a small input and a 1 KB output), then GETs the run
page through Django's test client — every middleware, the signed-in session, the template — and
prints the median and 95th percentile server time per size. Figures in docs/performance.md.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import ensure_database  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_run_page"


def measure(args) -> None:
    import warnings
    from datetime import UTC, datetime, timedelta

    import django

    warnings.filterwarnings("ignore", message="No directory at")
    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from apps.activity.models import Conversation, Run, RunStep
    from apps.workspaces.console import SESSION_AGENT_KEY
    from apps.workspaces.models import Agent
    from tests.factories import agent_factory, user_factory, workspace_factory

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.filter(email="bench-owner@example.com").first()
    if owner is None:
        owner = user_factory(email="bench-owner@example.com")
        agent_factory(workspace=workspace_factory(name="Bench", owner=owner), name="Bench")
    agent = Agent.objects.filter(workspace__name="Bench").first()
    assert agent is not None
    t0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)
    conversation, _ = Conversation.objects.get_or_create(
        agent=agent, id="conv_bench", defaults={"created_at": t0, "updated_at": t0}
    )
    client = Client()
    client.force_login(owner)
    session = client.session
    session[SESSION_AGENT_KEY] = agent.pk
    session.save()
    for size in args.steps:
        run_id = f"run_bench_{size}"
        if not Run.objects.filter(agent=agent, id=run_id).exists():
            Run.objects.create(
                agent=agent, id=run_id, conversation=conversation, request_id="bench",
                sdk_version="bench", created_at=t0, updated_at=t0,
            )  # fmt: skip
            RunStep.objects.bulk_create(
                RunStep(agent=agent, run_id=run_id, id=f"{run_id}_{index:04}",
                        parent_id=None if index % 10 == 0 else f"{run_id}_{index - index % 10:04}",
                        kind=("model", "tool", "custom")[index % 3], name=f"step {index}",
                        started_at=t0 + timedelta(milliseconds=index * 7), duration_ms=20,
                        ended_at=t0 + timedelta(milliseconds=index * 7 + 20),
                        total_tokens=index, input={"i": index}, output={"o": "x" * 1000},
                        created_at=t0, updated_at=t0)
                for index in range(size)
            )  # fmt: skip
        url = f"/runs/{run_id}/"
        for _ in range(3):
            response = client.get(url)  # warm
        if response.status_code != 200 or response.content.count(b'class="trace-row') != size:
            raise SystemExit(f"GET {url}: {response.status_code}, not {size} rows")
        timings = []
        for _ in range(args.requests):
            started = time.perf_counter()
            client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        p95 = timings[min(len(timings) - 1, int(len(timings) * 0.95))]
        print(
            f"{size:>4} steps: median {statistics.median(timings):6.1f} ms, p95 {p95:6.1f} ms "
            f"({args.requests} requests, {len(response.content):,} bytes)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument(
        "--steps", type=lambda text: [int(item) for item in text.split(",")], default=[10, 100, 500]
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure(args)
        return
    database_url = os.environ.get("RUN_PAGE_DATABASE_URL", DEFAULT_URL)
    ensure_database(database_url)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "LOG_LEVEL": "WARNING",
        "DEBUG": "0",
        "PYTHONPATH": str(ROOT),
    }
    steps = ",".join(str(size) for size in args.steps)
    command = [sys.executable, __file__, "--child", "--requests", str(args.requests)]
    subprocess.run([*command, "--steps", steps], env=env, check=True)


if __name__ == "__main__":
    main()
