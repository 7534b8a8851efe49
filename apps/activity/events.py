"""Announcements of recorded runs, so other apps can react without activity knowing them.

The dependency is one-way: webhooks (outbox rows for ended runs) and any other app that keeps
something derived from runs register a listener in their `AppConfig.ready()`; activity imports
none of them. Listeners run inside the recording transaction, so what they write commits or
rolls back with the run itself, and they must not do network I/O.
"""

from dataclasses import dataclass
from typing import Any

from apps.activity.models import Run
from apps.common.events import Announcement


@dataclass(frozen=True)
class RunRecorded:
    run: Run
    # The run's field values before this recording (None when the run was just created), so a
    # listener that keeps totals can apply the difference.
    previous: dict[str, Any] | None
    # True when this recording moved the run into an end state (completed, failed, aborted).
    ended: bool


run_recorded: Announcement[RunRecorded] = Announcement()
# The names listeners and the recording service use.
on_run_recorded = run_recorded.listen
announce_run_recorded = run_recorded.announce
