"""The worker's environment: glibc's huge pages tunable added, the operator's own kept, and
glibc really backing a large allocation with huge pages when a process starts with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.worker_environment import HUGE_PAGES_TUNABLE, worker_environment

pytestmark = pytest.mark.smoke

THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def test_the_tunable_is_added_beside_the_operators_and_never_overrides_their_choice() -> None:
    assert worker_environment({"PATH": "/bin"}) == {
        "PATH": "/bin",
        "GLIBC_TUNABLES": HUGE_PAGES_TUNABLE,
    }
    assert worker_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == {
        "GLIBC_TUNABLES": f"glibc.malloc.arena_max=2:{HUGE_PAGES_TUNABLE}"
    }
    chosen = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}
    assert worker_environment(chosen) == chosen


def _huge_pages_after_a_large_allocation(environment: dict[str, str]) -> int:
    program = (
        "data = bytearray(64 * 2**20)\n"
        "for offset in range(0, len(data), 4096): data[offset] = 1\n"
        "print(next(line.split()[1] for line in open('/proc/self/smaps_rollup')"
        " if line.startswith('AnonHugePages')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", program], env=environment, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


@pytest.mark.skipif(
    not THP_SETTING.exists() or "[never]" in THP_SETTING.read_text(),
    reason="this kernel offers no transparent huge pages",
)
def test_a_process_started_with_it_backs_large_allocations_with_huge_pages() -> None:
    plain = {key: value for key, value in os.environ.items() if key != "GLIBC_TUNABLES"}
    # At least one huge page (2 MB): a fragmented machine may not find 32 of them.
    assert _huge_pages_after_a_large_allocation(worker_environment(plain)) >= 2048  # kB
    if "[madvise]" in THP_SETTING.read_text():  # without the tunable, glibc never asks
        assert _huge_pages_after_a_large_allocation(plain) == 0
