"""The markers `make test-fast` selects on (pyproject.toml) stay true: a Celery worker starts
only in a test marked `worker`, and the fast loop leaves out every marker of a slow need."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.workers import BeatProcess, WorkerProcess

ROOT = Path(__file__).resolve().parent.parent


def test_a_worker_or_beat_started_without_the_worker_marker_is_refused(tmp_path: Path) -> None:
    worker = WorkerProcess()
    with pytest.raises(RuntimeError, match=r"starts a Celery worker: mark it @pytest.mark.worker"):
        worker.start()
    assert worker.process is None
    beat = BeatProcess(tmp_path)
    with pytest.raises(RuntimeError, match=r"starts Celery beat: mark it @pytest.mark.worker"):
        beat.start()
    assert beat.process is None


def test_make_test_fast_leaves_out_every_marker_but_smoke() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = {
        line.split(":")[0] for line in pyproject["tool"]["pytest"]["ini_options"]["markers"]
    }
    fast = re.search(r"^FAST_MARKERS := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert fast, "the Makefile defines FAST_MARKERS"
    left_out = set(re.findall(r"not (\w+)", fast.group(1)))
    assert left_out == declared - {"smoke"}
