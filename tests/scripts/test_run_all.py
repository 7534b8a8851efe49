"""scripts/run_all.py (`make run`): the beat it starts keeps its schedule in VAR_DIR, like every
other file of the embedded default, not in the checkout's var/."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection

from tests.redis_server import free_port
from tests.scripts.make_run import ROOT, make_run_env
from tests.workers import wait_for


def _schedule_files(folder: Path) -> dict[str, float]:
    """celerybeat-schedule as shelve writes it (one file, or .dat/.dir/.bak), with mtimes."""
    return {path.name: path.stat().st_mtime for path in folder.glob("celerybeat-schedule*")}


@pytest.mark.worker  # starts Celery beat, as `make run` does
def test_beat_writes_its_schedule_under_var_dir(tmp_path: Path) -> None:
    var_dir = tmp_path / "elsewhere"
    env = {
        **os.environ,
        "VAR_DIR": str(var_dir),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": "",  # the embedded default: broker folders in VAR_DIR too
        "DEBUG": "1",
    }
    listed = subprocess.run(
        [sys.executable, "-c",
         "import json, run_all; print(json.dumps(run_all.commands(port='8000')['beat']))"],
        cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT / "scripts")},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    beat = json.loads(listed.stdout.strip().splitlines()[-1])
    checkout_before = _schedule_files(ROOT / "var")
    var_dir.mkdir()
    process = subprocess.Popen(
        beat, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not _schedule_files(var_dir) and time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert _schedule_files(var_dir), "beat wrote no schedule under VAR_DIR"
    assert _schedule_files(ROOT / "var") == checkout_before


@pytest.fixture
def run_database(django_db_setup, django_db_blocker) -> Iterator[tuple[str, str]]:
    """A copy of the migrated test database for `make run`'s processes, owned by a role of its
    own (not a superuser, so PostgreSQL counts and limits its connections), dropped after.
    Yields (URL as that role, the role's name)."""
    with django_db_blocker.unblock():
        connection.close()
    db = connection.settings_dict
    test_name = db["NAME"]  # the test database's, once django_db_setup has made it
    server = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"{test_name}_makerun"
    admin_url = f"postgres://{db['USER']}@{server}"

    def drop(admin: psycopg.Connection) -> None:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{name}"')

    with psycopg.connect(f"{admin_url}/postgres", autocommit=True) as admin:
        drop(admin)
        admin.execute(f'CREATE ROLE "{name}" LOGIN')
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{test_name}" OWNER "{name}"')
    with psycopg.connect(f"{admin_url}/{name}", autocommit=True) as copy:
        for kind in ("TABLES", "SEQUENCES"):
            copy.execute(f'GRANT ALL ON ALL {kind} IN SCHEMA public TO "{name}"')
    try:
        yield f"postgres://{name}@{server}/{name}", name
    finally:
        with psycopg.connect(f"{admin_url}/postgres", autocommit=True) as admin:
            drop(admin)


def _connections_of(role: str) -> int:
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/postgres"
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", [role]
        ).fetchone()
    return row[0] if row else 0


@pytest.mark.worker
@pytest.mark.skipif(not settings.IS_POSTGRES, reason="counts PostgreSQL connections")
# Transactional: the migrated test database exists, and no transaction holds it while it is
# copied.
@pytest.mark.django_db(transaction=True)
def test_make_run_lets_go_of_its_connections_after_a_burst(run_database, tmp_path: Path) -> None:
    """Issue 34 §5: after 32 concurrent clients stop, `make run`'s web, workers and beat hold at
    most 10 PostgreSQL connections within 90 s (the development server kept one per thread it
    ever served, idle far beyond CONN_MAX_AGE); and with the server full for them, a request is
    still answered 503 with Retry-After."""
    if not settings.REDIS_URL:
        pytest.skip("make run's workers need Redis here (REDIS_URL)")
    url, role = run_database
    port = free_port()
    log = tmp_path / "run.log"
    env = make_run_env(
        tmp_path,
        port,
        DATABASE_URL=url,
        REDIS_URL=settings.REDIS_URL,
        MEDIA_ROOT=str(tmp_path / "media"),
        # Queues of this test's own: its workers take nothing of another test's.
        CELERY_TASK_DEFAULT_QUEUE=f"{role}-bulk",
        CELERY_INTERACTIVE_QUEUE=f"{role}-interactive",
    )
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "scripts/run_all.py"], cwd=ROOT, env=env, stdout=output,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        key = wait_for(
            lambda: re.search(r"API key\s+(\S+)", log.read_text()),
            timeout=180,
            message="make run printed no API key",
        ).group(1)
        headers = {"Authorization": f"Bearer {key}"}

        def answered() -> bool:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                return httpx.get(f"{base}/v1/runs", headers=headers, timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(answered, timeout=120, message="make run's web did not answer")

        # 32 clients at once, each request on a connection of its own (a browser's, a script's).
        failures: list[str] = []

        def client() -> None:
            for _ in range(4):
                response = httpx.get(f"{base}/v1/runs?limit=5", headers=headers, timeout=60)
                if response.status_code != 200:
                    failures.append(f"{response.status_code} {response.text[:200]}")

        threads = [threading.Thread(target=client) for _ in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures[:3]
        ended = time.monotonic()

        counts: list[int] = []

        def few_held() -> bool:
            counts.append(_connections_of(role))
            return counts[-1] <= 10

        held = few_held()
        while not held and time.monotonic() - ended < 90:
            time.sleep(2)
            held = few_held()
        assert held, f"make run still held {counts[-1]} connections 90 s after the burst ({counts})"

        # The server full for these processes: a request that needs a connection of its own
        # gets 503 with Retry-After.
        with psycopg.connect(
            url.replace(f"{role}@", f"{connection.settings_dict['USER']}@"), autocommit=True
        ) as admin:
            admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT {_connections_of(role)}')
        full = httpx.get(f"{base}/v1/runs", headers=headers, timeout=30)
        assert full.status_code == 503, full.text[:500]
        assert full.headers["Retry-After"].isdigit()
        assert full.json()["name"] == "service_unavailable"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
