"""`Unit`: one batch of records for one Agent, recorded in its three stages (the package's
docstring): prefetch (`reading`), each record applied in memory (`conversations`, `runs`,
`steps`), and the flush (`writing`, and the runs brought in line with their steps).
"""

from apps.activity.events import RunRecorded, announce_runs_recorded
from apps.activity.models import END_STATES, Conversation, EndUser, Message, Run, RunStep
from apps.activity.recording.conversations import ConversationRecords
from apps.activity.recording.runs import RunRecords
from apps.activity.recording.steps import StepRecords
from apps.activity.recording.writing import BatchWrites


class Unit(ConversationRecords, RunRecords, StepRecords, BatchWrites):
    """One batch of records for one Agent (the package's docstring)."""

    def record(self, kind: str, data: dict, label: str) -> str:
        return getattr(self, f"_{kind}")(data, label)

    def flush(self) -> None:
        """Write the batch (module docstring); call inside the recording transaction."""
        for model in (EndUser, Conversation, Message, RunStep):
            self._write(model)
        self._reconcile()
        self._write(Run)
        events = []
        for run_id, before in self.run_before.items():
            if run_id not in self.changed_runs:
                continue
            run = self.rows[Run][run_id]
            was_ended = before is not None and before["status"] in END_STATES
            events.append(
                RunRecorded(
                    run=run, previous=before, ended=run.status in END_STATES and not was_ended
                )
            )
        self._rollup(events)
        if events:
            announce_runs_recorded(events)
