"""What a step or a run adds to the analytics rollup: the groups and keys it counts under, its
counters and latency bucket, summed in a `Delta` before one statement writes them
(apps.activity.analytics.rollup)."""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
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


def counters_of(values: Mapping, latency: Any) -> tuple[list, int | None]:
    """A run's or step's counters (one, failed, input, output and total tokens, credits) and
    the bucket of its `latency` (None: no latency)."""
    failed = 1 if values.get("status") == "failed" else 0
    counts: list[Any] = [1, failed, *[int(values.get(name) or 0) for name in TOKENS]]
    counts.append(credits_decimal(values.get("credits_charged")))
    return counts, None if latency is None else bucket_of(float(latency))


@dataclass
class Delta:
    """Differences to add: {(group, key, day): [count, failed, input, output, total, credits]}
    and {(group, key, day, bucket): count}."""

    counters: dict[tuple[str, str, date], list] = field(
        default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0, 0, Decimal(0)])
    )
    buckets: dict[tuple[str, str, date, int], int] = field(default_factory=lambda: defaultdict(int))

    def _add(self, keys: Iterable[tuple[str, str]], values: Mapping, day: date, latency: Any,
             sign: int) -> None:  # fmt: skip
        counts, bucket = counters_of(values, latency)
        for group, key in keys:
            self.add_counts(group, key, day, counts, bucket, sign)

    def add_counts(self, group: str, key: str, day: date, counts: Sequence, bucket: int | None,
                   sign: int, runs: int = 1) -> None:  # fmt: skip
        """Add `sign` x `counts` (count, failed, tokens..., credits) to one row, and `runs` to
        its latency `bucket` (None: no latency)."""
        counter = self.counters[(group, key, day)]
        for index, value in enumerate(counts):
            counter[index] += sign * value
        if bucket is not None:
            self.buckets[(group, key, day, bucket)] += sign * runs

    def add_step(self, values: Mapping, *, sign: int = 1) -> None:
        keys = [("name", str(values["name"])[:255])]
        if values.get("tool_name"):
            keys.append(("tool", str(values["tool_name"])[:255]))
        if values.get("model_id"):
            keys.append(("model", str(values["model_id"])[:255]))
        self._add(keys, values, _day(values["started_at"]), values.get("duration_ms"), sign)

    def add_runs(self, runs: Iterable[Mapping], *, sign: int = 1) -> None:
        """Add (or take away) runs. This runs inside the request that records them, and a
        batch's runs mostly count under the same rows (one day, model, status, tools and
        conversation): runs that do are summed first, and their rows are found once."""
        alike: dict[tuple, tuple[Mapping, list, int]] = {}
        for values in runs:
            day = _day(values["created_at"])
            counts, bucket = counters_of(values, values.get("total_turn_latency_ms"))
            # Everything a run's rows are keyed by (RUN_GROUPS, run_contribution).
            signature = (
                day, bucket, values.get("status"), values.get("model_id"),
                *(values.get(group) for group in RUN_GROUPS),
                tuple(map(str, values.get("tool_names") or ())),
                tuple(map(str, values.get("failed_tool_names") or ())),
                values.get("user_id"), values.get("conversation_id"),
            )  # fmt: skip
            same = alike.get(signature)
            if same is None:
                alike[signature] = (values, counts, 1)
            else:
                first, total, number = same
                summed = [a + b for a, b in zip(total, counts, strict=True)]
                alike[signature] = (first, summed, number + 1)
        for (day, bucket, *_keys), (values, counts, number) in alike.items():
            for group in RUN_GROUPS:
                self.add_counts(group, values.get(group) or "", day, counts, bucket, sign, number)
            overview_rollup.run_contribution(
                self, values, day, sign, counts=counts, bucket=bucket, runs=number
            )

    def __bool__(self) -> bool:
        return any(any(values) for values in self.counters.values()) or any(self.buckets.values())


def step_values(step: Any) -> dict[str, Any]:
    """A step's contribution fields, from a row or a dict of field values."""
    if isinstance(step, Mapping):
        return {name: step.get(name) for name in STEP_FIELDS}
    return {name: getattr(step, name) for name in STEP_FIELDS}


def run_values(run: Any) -> dict[str, Any]:
    if isinstance(run, Mapping):
        return {name: run.get(name) for name in RUN_FIELDS}
    return {name: getattr(run, name) for name in RUN_FIELDS}
