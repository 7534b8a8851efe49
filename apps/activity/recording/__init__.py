"""The set-based engine behind every activity write (apps.activity.services' rules).

A `Unit` records a batch of records for one Agent with a bounded number of statements whatever
the batch's size:

1. `prefetch` loads every row the records name, in one query per table: the rows they write
   locked (`SELECT ... FOR UPDATE`, in id order so two batches lock in the same order), the
   rows they only reference (a message's conversation, a step's parent) read plain.
2. `record` applies each record, in order, to those rows in memory, with the same checks as
   one record at a time would (a reference to a row created earlier in the batch counts).
   A row the prefetch did not load (a grandparent step, a lookup by a caller) is read on demand.
3. `flush` writes what changed: one COPY of the new rows per table (a concurrent insert of
   the same id fails the batch with a 400 naming the record), one upsert on the row key
   of the changed rows per table, then brings the runs in line with their steps (three grouped
   queries), writes the runs, and announces the runs recorded as one batch (usage adds one
   increment per Agent and day; webhooks records the ended runs' deliveries).

The composite foreign keys between the tables are deferred to commit (migrations 0003, 0006),
so the tables are written in whatever order suits the batch.

The stages are modules of this package: `reading` (prefetch), `conversations`, `runs` and
`steps` (each kind of record applied in memory), `writing` and `inserts` (the flush's
statements), all joined in `unit.Unit`; `batch` holds what a batch keeps in memory. Callers
import from `apps.activity.recording`.
"""

from apps.activity.recording.batch import CREATED, UNCHANGED, UPDATED
from apps.activity.recording.inserts import new_row, rows_insert, values_insert
from apps.activity.recording.reading import Wanted, wanted_of
from apps.activity.recording.runs import STEP_TOTALS
from apps.activity.recording.steps import MAX_STEP_DEPTH, step_bounded
from apps.activity.recording.unit import Unit

__all__ = [
    "CREATED",
    "MAX_STEP_DEPTH",
    "STEP_TOTALS",
    "UNCHANGED",
    "UPDATED",
    "Unit",
    "Wanted",
    "new_row",
    "rows_insert",
    "step_bounded",
    "values_insert",
    "wanted_of",
]
