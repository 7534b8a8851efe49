"""Run an extraction in a forked child with a memory cap and a wall-clock timeout.

Parsers can loop, recurse or allocate without bound on hostile files. The child gets
``RLIMIT_AS`` (address space) and a CPU-time backstop, returns a pickled result through a pipe
and leaves with ``os._exit``; the parent reads with a deadline and kills the child when it
passes. Whatever the child does (loops, segfaults, gets OOM-killed), the parent only ever
raises ExtractionFailed.

``os.fork`` rather than ``multiprocessing.Process``: Celery's prefork pool runs tasks in
daemonic processes, which multiprocessing refuses to give children. The extractor module is
imported in the parent before forking, so the child starts warm and a busy worker imports
trafilatura once, not once per document.

``memory_mb`` is the address space the child may add to what it inherits: a worker with Django
loaded already maps a few hundred megabytes, which a plain cap would count against the file.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
from typing import NoReturn

from .errors import ExtractionFailed
from .result import Extraction

TIMED_OUT = "Extraction took too long and was stopped."
CRASHED = "Extraction stopped unexpectedly (the file may be too large or malformed)."
TOO_MUCH_MEMORY = "The file needs too much memory to extract."
_MAX_RESULT_BYTES = 512 * 1024 * 1024


def extract_bounded(
    data: bytes,
    *,
    kind: str,
    source_url: str | None = None,
    ocr: bool = True,
    timeout_s: float = 60,
    memory_mb: int = 1024,
) -> Extraction:
    from . import extractor_for

    extractor_for(kind)  # import in the parent; also rejects an unknown kind here
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        # No process to be had (EAGAIN, ENOMEM): the machine's problem, not the file's, so
        # the caller sees OSError and can retry later rather than fail the document.
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # child
        os.close(read_fd)
        _run_child(
            write_fd,
            data=data,
            kind=kind,
            source_url=source_url,
            ocr=ocr,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
        )
    os.close(write_fd)
    try:
        payload = _read_with_deadline(read_fd, time.monotonic() + timeout_s)
    finally:
        os.close(read_fd)
        _reap(pid)
    if payload is None:
        raise ExtractionFailed(TIMED_OUT)
    try:
        status, value = pickle.loads(payload)  # noqa: S301 - our own child wrote it
    except Exception:
        raise ExtractionFailed(CRASHED) from None
    if status == "ok" and isinstance(value, Extraction):
        return value
    raise ExtractionFailed(str(value) if status == "error" else CRASHED)


def _run_child(
    write_fd: int,
    *,
    data: bytes,
    kind: str,
    source_url: str | None,
    ocr: bool,
    timeout_s: float,
    memory_mb: int,
) -> NoReturn:
    code = 0
    deadline = time.monotonic() + timeout_s
    try:
        from . import extract  # already imported by the parent: no import work here
        from .tools import set_deadline

        set_deadline(deadline)  # programs the extractors run end before the parent gives up
        # The worker's handlers (Celery's warm shutdown, Django's autoreloader) are not ours.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _limit_resources(timeout_s=timeout_s, memory_mb=memory_mb)
        try:
            result: tuple[str, object] = (
                "ok",
                extract(data, kind=kind, source_url=source_url, ocr=ocr),
            )
        except ExtractionFailed as exc:
            result = ("error", str(exc))
        except MemoryError:
            result = ("error", TOO_MUCH_MEMORY)
        try:
            payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps(("error", TOO_MUCH_MEMORY))
        view = memoryview(payload)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
    except BaseException:
        code = 1
    finally:
        # Never return into the caller's stack and never run its atexit handlers or flush
        # its buffers (database connections, Celery's pool pipes belong to the parent).
        os._exit(code)


def _limit_resources(*, timeout_s: float, memory_mb: int) -> None:
    page = os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * page
    limit = current + memory_mb * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # A backstop if the parent dies and cannot kill us: the kernel does it on CPU time.
    cpu = int(timeout_s) + 2
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or cpu <= hard:
        resource.setrlimit(
            resource.RLIMIT_CPU, (cpu, cpu if hard == resource.RLIM_INFINITY else hard)
        )


def _read_with_deadline(fd: int, deadline: float) -> bytes | None:
    """Everything the child writes until it closes the pipe; None if the deadline passes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            return None
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _MAX_RESULT_BYTES:
            return b""
        chunks.append(chunk)


def _reap(pid: int) -> None:
    """Kill the child if it is still running and collect it, so no zombie is left."""
    try:
        finished, _status = os.waitpid(pid, os.WNOHANG)
        if finished == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        pass
