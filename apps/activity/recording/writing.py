"""The flush's statements: each table's new rows in one COPY (a concurrent insert of the same
id fails the batch with a 400 naming the record), its changed rows in one upsert on the row key,
and the batch's differences to the analytics rollup in one statement.
"""

import re

from django.db import IntegrityError

from apps.activity import analytics
from apps.activity.events import RunRecorded
from apps.activity.models import EndUser, RunStep
from apps.activity.recording.batch import Batch
from apps.activity.recording.inserts import rows_insert
from apps.common.errors import BadRequest

# PostgreSQL's detail of a unique violation on an Agent's id or external id.
_CLASH = re.compile(r"^Key \(agent_id, (id|external_id)\)=\([^,]*, (.*)\) already exists")


class BatchWrites(Batch):
    """Writing a batch's rows and its rollup differences to the database."""

    def _rollup(self, events: list[RunRecorded]) -> None:
        """The batch's differences to the analytics rollup (apps.activity.analytics)."""
        delta = analytics.Delta()
        steps = self.rows[RunStep]
        written = [*self.new[RunStep], *self.step_before]
        delta.add_steps([analytics.step_values(steps[step_id]) for step_id in written])
        delta.add_steps(self.step_before.values(), sign=-1)
        delta.add_runs([analytics.run_values(event.run) for event in events])
        delta.add_runs(
            [
                analytics.run_values(event.previous)
                for event in events
                if event.previous is not None
            ],
            sign=-1,
        )
        analytics.rollup_apply(self.agent.pk, delta)

    def _write(self, model: type) -> None:
        new = self.new[model]
        if new:
            rows = [self.rows[model][row_id] for row_id in new]
            try:
                # No savepoint of its own (two round trips): a clash fails the whole batch,
                # whose transaction the caller's atomic block rolls back.
                rows_insert(model, rows)
            except IntegrityError as exc:
                raise self._clash(model, new, exc) from None
        dirty = self.dirty[model]
        if dirty:
            names = sorted(set().union(*dirty.values()))
            model.objects.bulk_create(  # type: ignore[attr-defined]
                [self.rows[model][row_id] for row_id in sorted(dirty)],
                batch_size=1000,
                update_conflicts=True,
                unique_fields=["row"],
                update_fields=names,
            )

    def _clash(self, model: type, new: dict[str, str], exc: IntegrityError) -> BadRequest:
        """The 400 of a batch whose new rows clashed with rows inserted meanwhile, naming the
        record PostgreSQL names (`Key (agent_id, id)=(agt_1, run_1) already exists.`); the
        transaction is aborted, so nothing more is read."""
        diag = getattr(exc.__cause__, "diag", None)
        match = _CLASH.search(getattr(diag, "message_detail", None) or "")
        column, value = match.groups() if match else ("id", None)
        if model is EndUser and column == "external_id":
            label = next(
                (label for row_id, label in new.items()
                 if self.rows[EndUser][row_id].external_id == value),
                next(iter(new.values())),
            )  # fmt: skip
            return BadRequest(f"{label}.external_id: already recorded for another user.")
        row_id, label = next(
            ((row_id, label) for row_id, label in new.items() if row_id == value),
            next(iter(new.items())),
        )
        return BadRequest(
            f"{label}.id: {row_id!r} was recorded concurrently or clashes with another record; "
            "send the record again."
        )
