"""External programs run from inside the extraction child: Debian's catdoc and catppt for
legacy Word and PowerPoint files, tesseract for OCR.

Each program runs as a subprocess of the bounded child, so it inherits the child's limits
(``RLIMIT_AS`` and ``RLIMIT_CPU`` survive ``exec``) and is given a timeout that ends before the
child's own deadline: a program that hangs is killed, and the child still has time to report
why. The input goes through a private temporary directory that is removed afterwards.
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time

from .errors import DAMAGED, ExtractionFailed

TIMED_OUT = "Extraction took too long and was stopped."
# What a program may print; more than this is not text a document needs.
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
# The child keeps this much of its time to send its answer after a program is killed.
_MARGIN_S = 1.0
_DEFAULT_BUDGET_S = 60.0

INPUT = "{input}"

_deadline: float | None = None


def set_deadline(deadline: float | None) -> None:
    """Called by the bounded child with the monotonic time at which the parent gives up."""
    global _deadline
    _deadline = deadline


def time_left() -> float:
    """Seconds a program may still run (an in-process ``extract`` gets a default budget)."""
    if _deadline is None:
        return _DEFAULT_BUDGET_S
    return _deadline - time.monotonic() - _MARGIN_S


def memory_left() -> int | None:
    """Bytes of address space this process may still map; None when it is not limited."""
    limit, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None
    return max(limit - mapped, 0)


def run_tool(
    args: list[str], *, data: bytes, suffix: str, missing: str, timeout_s: float | None = None
) -> bytes:
    """Run ``args`` on a file holding ``data``; return what it prints.

    The file's path replaces the ``INPUT`` argument, or is added at the end. ``missing`` is the
    message when the program is not installed. A non-zero exit is a file the program could
    not read (DAMAGED); running out of time is TIMED_OUT.
    """
    budget = time_left() if timeout_s is None else min(timeout_s, time_left())
    if budget <= 0:
        raise ExtractionFailed(TIMED_OUT)
    with tempfile.TemporaryDirectory(prefix="extract-") as directory:
        path = os.path.join(directory, f"input{suffix}")
        with open(path, "wb") as handle:
            handle.write(data)
        try:
            completed = subprocess.run(
                [path if arg == INPUT else arg for arg in args] + ([] if INPUT in args else [path]),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=budget,
                check=False,
                env=_environment(directory),
                cwd=directory,
            )
        except FileNotFoundError:
            raise ExtractionFailed(missing) from None
        except subprocess.TimeoutExpired:
            raise ExtractionFailed(TIMED_OUT) from None
    if completed.returncode != 0 or len(completed.stdout) > MAX_OUTPUT_BYTES:
        raise ExtractionFailed(DAMAGED)
    return completed.stdout


def _environment(directory: str) -> dict[str, str]:
    # Nothing of the worker's environment (credentials, settings) reaches the program.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": directory,
        "TMPDIR": directory,
        "LANG": "C.UTF-8",
        # tesseract starts one thread per core by default; one document gets one core.
        "OMP_THREAD_LIMIT": "1",
    }
