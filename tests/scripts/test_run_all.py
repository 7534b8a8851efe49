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
