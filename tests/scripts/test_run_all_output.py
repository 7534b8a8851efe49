"""`make run` (scripts/run_all.py) on the embedded default: the console address is printed
only once it answers, the sign-in and the demo key last (issue 38, defect 11); a process that
dies on its own is named."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.redis_server import free_port
from tests.scripts.make_run import ROOT, embedded_default_env


# `make run` starts three Celery workers and beat (35 s of CPU): out of `make test-fast`.
@pytest.mark.worker
def test_make_run_prints_the_address_once_it_answers_and_the_key_last(tmp_path: Path) -> None:
    """Issue 38, defect 11: the address is printed only once the web process answers (a click
    on it at once works), the sign-in and the once-shown key come after the workers' start-up
    output, and the start-up warnings (SQLite's W040, Kombu's "No hostname") are gone."""
    import urllib.request

    port = free_port()
    env, migrated = embedded_default_env(tmp_path, port)
    assert "W040" not in migrated
    process = subprocess.Popen(
        [sys.executable, "scripts/run_all.py"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            line = process.stdout.readline()  # type: ignore[union-attr]
            assert line, "run_all stopped:\n" + "".join(lines[-40:])
            lines.append(line)
            if "Console:" in line:
                # Clicked at once: it answers.
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=10) as r:
                    assert r.status == 200
                break
        else:
            raise AssertionError("no Console line:\n" + "".join(lines[-40:]))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    text = "".join(lines)
    owner = max(i for i, line in enumerate(lines) if "Owner " in line)
    key = max(i for i, line in enumerate(lines) if "API key " in line)
    ready = [i for i, line in enumerate(lines) if " ready." in line and "@" in line]
    # interactive, webhooks and bulk: every worker is ready before the sign-in is printed
    assert len(ready) == 3 and max(ready) < owner and max(ready) < key
    assert "W040" not in text
    assert '"logger":"kombu.connection"' not in text


@pytest.mark.worker
def test_a_process_that_dies_on_its_own_is_named_and_the_rest_stop(tmp_path: Path) -> None:
    """The web process cannot bind its port (something holds it): `make run` says which process
    exited and with what code, stops the others and exits non-zero, instead of showing only the
    workers' shutdown."""
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    env, _migrated = embedded_default_env(tmp_path, holder.getsockname()[1])
    try:
        finished = subprocess.run(
            [sys.executable, "scripts/run_all.py"], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        holder.close()
    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, output[-3000:]
    assert "web exited (code 1); stopping the rest." in output, output[-3000:]
    assert "Console:" not in output
