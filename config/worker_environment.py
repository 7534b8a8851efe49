"""The environment a Celery worker starts with.

`make run` (scripts/run_all.py), benchmarks/worker_memory.py and the tests' real workers
(tests/workers.py) start their worker with it; the README's production command sets the same
variable.
"""

from __future__ import annotations

from collections.abc import Mapping

# glibc's malloc backs its large allocations with transparent huge pages, where the kernel
# offers them on madvise (Debian's default): the extraction child forked for each file then
# takes far fewer page faults on its fresh buffers. Bounded extractions of the JSON
# benchmark's 12-18 MB files mostly took 15-25 % less time, the text pass-through's too, and a
# worker child's peak while embedding did not move (docs/performance.md). glibc reads it when
# a process starts, so it is set in the worker's environment, not in the settings; a glibc
# without this tunable (before 2.35) ignores it.
HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"


def worker_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` with the huge pages tunable added to GLIBC_TUNABLES, unless the
    operator already chose a ``glibc.malloc.hugetlb`` value."""
    result = dict(environment)
    tunables = result.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb=" not in tunables:
        result["GLIBC_TUNABLES"] = (
            f"{tunables}:{HUGE_PAGES_TUNABLE}" if tunables else HUGE_PAGES_TUNABLE
        )
    return result
