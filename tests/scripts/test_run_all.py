"""scripts/run_all.py (`make run`): the beat it starts keeps its schedule in VAR_DIR, like every
other file of the embedded default, not in the checkout's var/."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _schedule_files(folder: Path) -> dict[str, float]:
    """celerybeat-schedule as shelve writes it (one file, or .dat/.dir/.bak), with mtimes."""
    return {path.name: path.stat().st_mtime for path in folder.glob("celerybeat-schedule*")}


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


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_make_run_prints_the_address_once_it_answers_and_the_key_last(tmp_path: Path) -> None:
    """Issue 38, defect 11: the address is printed only once the web process answers (a click
    on it at once works), the sign-in and the once-shown key come after the workers' start-up
    output, and the start-up warnings (SQLite's W040, Kombu's "No hostname") are gone."""
    import urllib.request

    port = _free_port()
    env = {
        **os.environ,
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": "",
        "DEBUG": "1",
        "PORT": str(port),
    }
    (tmp_path / "var").mkdir()
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "W040" not in migrated.stdout + migrated.stderr
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
    assert len(ready) == 2 and max(ready) < owner and max(ready) < key
    assert "W040" not in text
    assert '"logger":"kombu.connection"' not in text
