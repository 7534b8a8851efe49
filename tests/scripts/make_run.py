"""The environment a test starts `scripts/run_all.py` (`make run`) in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def make_run_env(tmp_path: Path, port: int, **overrides: str) -> dict[str, str]:
    """Ours, with a VAR_DIR of its own under `tmp_path`, DEBUG on, `port`, and `overrides`.
    Without our metrics folder: run_all.py empties PROMETHEUS_MULTIPROC_DIR at start, and the
    one the settings put in our environment is every test process's of this run (emptied, it
    once made a metrics test's counter go down mid-test); it makes its own in its VAR_DIR."""
    env = {
        **os.environ,
        "VAR_DIR": str(tmp_path / "var"),
        "DEBUG": "1",
        "PORT": str(port),
        **overrides,
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def embedded_default_env(tmp_path: Path, port: int) -> tuple[dict[str, str], str]:
    """`make run`'s embedded default (SQLite, no Redis) under `tmp_path`, migrated: (the
    environment, what the migration printed)."""
    env = make_run_env(
        tmp_path, port, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", REDIS_URL=""
    )
    (tmp_path / "var").mkdir()
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return env, migrated.stdout + migrated.stderr
