"""Announcements of recorded runs, so other apps can react without activity knowing them.

The dependency is one-way: webhooks (outbox rows for ended runs) and any other app that keeps
something derived from runs register a listener in their `AppConfig.ready()`; activity imports
none of them. Listeners run inside the recording transaction, so what they write commits or
rolls back with the run itself, and they must not do network I/O.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.activity.models import Run


@dataclass(frozen=True)
class RunRecorded:
    run: Run
    # The run's field values before this recording (None when the run was just created), so a
    # listener that keeps totals can apply the difference.
    previous: dict[str, Any] | None
    # True when this recording moved the run into an end state (completed, failed, aborted).
    ended: bool


RunListener = Callable[[RunRecorded], None]
_run_listeners: list[RunListener] = []


def on_run_recorded(listener: RunListener) -> RunListener:
    """Register `listener` (usable as a decorator); registering it twice keeps one."""
    if listener not in _run_listeners:
        _run_listeners.append(listener)
    return listener


def announce_run_recorded(event: RunRecorded) -> None:
    for listener in _run_listeners:
        listener(event)
