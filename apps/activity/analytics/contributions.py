"""What a step or a run adds to the analytics rollup: the groups and keys it counts under, its
counters and latency bucket, summed in a `Delta` before one statement writes them
(apps.activity.analytics.rollup)."""

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from apps.activity import overview_rollup
from apps.common.credits import credits_decimal
from apps.common.latency import bucket_of

STEP_GROUPS = ("tool", "model", "name")
RUN_GROUPS = ("environment", "release")
GROUPS = STEP_GROUPS + RUN_GROUPS
TOKENS = ("input_tokens", "output_tokens", "total_tokens")
# The step and run fields a contribution reads.
STEP_FIELDS = (
    "name", "tool_name", "model_id", "status", "duration_ms", "started_at", *TOKENS,
    "credits_charged",
)  # fmt: skip
RUN_FIELDS = (
    "environment", "release", "status", "total_turn_latency_ms", "created_at", *TOKENS,
    "credits_charged", *overview_rollup.RUN_FIELDS,
)  # fmt: skip


def _day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


@dataclass
class Delta:
    """Differences to add: {(group, key, day): [count, failed, input, output, total, credits]}
    and {(group, key, day, bucket): count}."""

    counters: dict[tuple[str, str, date], list] = field(
        default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0, 0, Decimal(0)])
    )
    buckets: dict[tuple[str, str, date, int], int] = field(default_factory=lambda: defaultdict(int))

    def add_counts(self, group: str, key: str, day: date, counts: Sequence, bucket: int | None,
                   sign: int, number: int = 1) -> None:  # fmt: skip
        """Add `sign` x `counts` (count, failed, tokens..., credits) of `number` steps or runs
        to one row, and `number` to its latency `bucket` (None: no latency)."""
        counter = self.counters[(group, key, day)]
        for index, value in enumerate(counts):
            counter[index] += sign * value
        if bucket is not None:
            self.buckets[(group, key, day, bucket)] += sign * number

    def add_steps(self, steps: Iterable[Mapping], *, sign: int = 1) -> None:
        """Add (or take away) steps, mappings of their `STEP_FIELDS`: each counts under its
        name, and its tool and model when it has them, on the day it started."""
        for (name, tool, model, day, bucket, _failed), (_values, counts, number) in _alike(
            steps, _step_signature
        ).items():
            for group, key in (("name", name), ("tool", tool), ("model", model)):
                if key or group == "name":
                    self.add_counts(group, key, day, counts, bucket, sign, number)

    def add_runs(self, runs: Iterable[Mapping], *, sign: int = 1) -> None:
        """Add (or take away) runs, mappings of their `RUN_FIELDS`."""
        for (day, bucket, *_keys), (values, counts, number) in _alike(runs, _run_signature).items():
            for group in RUN_GROUPS:
                self.add_counts(group, values.get(group) or "", day, counts, bucket, sign, number)
            overview_rollup.run_contribution(
                self, values, day, sign, counts=counts, bucket=bucket, runs=number
            )

    def __bool__(self) -> bool:
        return any(any(values) for values in self.counters.values()) or any(self.buckets.values())


def _step_signature(step: Mapping) -> tuple:
    """What a step's rows are keyed by: name, tool, model, day, latency bucket (and whether
    it failed, which its counters differ by)."""
    latency = step.get("duration_ms")
    return (
        str(step.get("name"))[:255],
        str(step.get("tool_name") or "")[:255],
        str(step.get("model_id") or "")[:255],
        _day(step["started_at"]),
        None if latency is None else bucket_of(float(latency)),
        step.get("status") == "failed",
    )


def _run_signature(run: Mapping) -> tuple:
    """What a run's rows are keyed by (RUN_GROUPS and overview_rollup.run_contribution's), day
    and latency bucket first."""
    latency = run.get("total_turn_latency_ms")
    return (
        _day(run["created_at"]),
        None if latency is None else bucket_of(float(latency)),
        run.get("status"),
        run.get("model_id"),
        *(run.get(group) for group in RUN_GROUPS),
        tuple(map(str, run.get("tool_names") or ())),
        tuple(map(str, run.get("failed_tool_names") or ())),
        run.get("user_id"),
        run.get("conversation_id"),
    )


def _alike(
    items: Iterable[Mapping], signature_of: Callable[[Mapping], tuple]
) -> dict[tuple, tuple[Mapping, list, int]]:
    """{signature: (the first item's fields, the items' summed counters: count, failed, input,
    output and total tokens, credits; how many)}. This runs inside the request that records
    them, and a batch's steps and runs mostly count under the same rows (one day, name,
    model, status, tools, conversation): those that do are summed here, their rows found once."""
    alike: dict[tuple, tuple[Mapping, list]] = {}
    for values in items:
        signature = signature_of(values)
        same = alike.get(signature)
        if same is None:
            same = alike[signature] = (values, [0, 0, 0, 0, 0, Decimal(0)])
        total = same[1]
        total[0] += 1
        if values.get("status") == "failed":
            total[1] += 1
        for index, name in enumerate(TOKENS, start=2):
            total[index] += int(values.get(name) or 0)
        credits = values.get("credits_charged")
        if credits is not None:
            # Each row's credits as the database's float-to-numeric cast keeps them, so the
            # sums equal a rebuild's.
            total[5] += credits_decimal(credits)
    # How many: the count, the first counter.
    return {signature: (values, total, total[0]) for signature, (values, total) in alike.items()}


def step_values(step: Any) -> dict[str, Any]:
    """A step's contribution fields, from a row or a dict of field values."""
    if isinstance(step, Mapping):
        return {name: step.get(name) for name in STEP_FIELDS}
    return {name: getattr(step, name) for name in STEP_FIELDS}


def run_values(run: Any) -> dict[str, Any]:
    if isinstance(run, Mapping):
        return {name: run.get(name) for name in RUN_FIELDS}
    return {name: getattr(run, name) for name in RUN_FIELDS}
