"""Applying step records to the batch's rows in memory: large values shortened (and named in
`truncated`), a step's parent a step of the same run and never its own descendant, a step that
never moves to another run; the step as it was before kept for the analytics rollup.
"""

from apps.activity import analytics
from apps.activity.bounds import bounded_attributes, bounded_documents, bounded_json, bounded_text
from apps.activity.models import Run, RunStep
from apps.activity.recording.batch import (
    CREATED,
    UNCHANGED,
    UPDATED,
    _apply,
    _apply_search,
    _require,
)
from apps.activity.recording.inserts import new_row
from apps.activity.recording.reading import BatchReads
from apps.activity.recording.runs import STEP_TOTALS
from apps.activity.search_index import (
    STEP_SOURCES,
    step_search_fields,
    step_sources_changed,
)
from apps.common.errors import BadRequest

_STEP_FIELDS = (
    "parent_id", "kind", "name", "status", "error", "started_at", "ended_at", "duration_ms",
    "input", "output", "model_id", *STEP_TOTALS, "first_token_ms", "finish_reason", "tool_name",
    "mcp_server", "query", "documents", "attributes",
)  # fmt: skip
# Ancestors walked to refuse a parent cycle; deeper trees than this are refused as well.
MAX_STEP_DEPTH = 1000
_BOUNDED = ("input", "output", "error", "query", "documents", "attributes")


def step_bounded(data: dict) -> tuple[dict, list[str]]:
    """The step fields with large values shortened, and the names of those shortened."""
    data = dict(data)
    truncated: list[str] = []
    for name in ("input", "output"):
        if name in data:
            data[name], cut = bounded_json(data[name])
            if cut:
                truncated.append(name)
    for name in ("error", "query"):
        if name in data:
            data[name], cut = bounded_text(data[name])
            if cut:
                truncated.append(name)
    if "documents" in data:
        data["documents"], cut = bounded_documents(data["documents"])
        if cut:
            truncated.append("documents")
    if "attributes" in data:
        data["attributes"], cut_names = bounded_attributes(data["attributes"])
        truncated += cut_names
    if "name" in data:
        data["name"] = data["name"][:255]
    return data, truncated


def _truncated_after(previous: list[str], data: dict, cut: list[str]) -> list[str]:
    """A step's `truncated` once `data` replaced some fields: marks of replaced fields go."""
    kept = [
        name
        for name in previous
        if name.split(".", 1)[0] not in data or name.split(".", 1)[0] not in _BOUNDED
    ]
    return kept + [name for name in cut if name not in kept]


class StepRecords(BatchReads):
    """The `step` records of a batch."""

    def _parent_check(self, *, step_id: str, run_id: str, parent_id: str, label: str) -> None:
        """The parent is a step of the same run, and the step is not among its ancestors."""
        current: str | None = parent_id
        for _depth in range(MAX_STEP_DEPTH):
            if current is None:
                return
            if current == step_id:
                raise BadRequest(f"{label}.parent_id: {parent_id!r} would make a cycle of steps.")
            parent = self.get(RunStep, current)
            if parent is None or parent.run_id != run_id:
                raise BadRequest(
                    f"{label}.parent_id: no step {current!r} recorded for run {run_id!r}."
                )
            current = parent.parent_id
        raise BadRequest(f"{label}.parent_id: steps nest deeper than {MAX_STEP_DEPTH} levels.")

    def _step_validate(self, step: RunStep, data: dict, *, label: str) -> None:
        if step.ended_at is not None and step.ended_at < step.started_at:
            raise BadRequest(f"{label}.ended_at: earlier than started_at.")
        if "duration_ms" not in data and step.ended_at is not None:
            step.duration_ms = (step.ended_at - step.started_at).total_seconds() * 1000
        if step.parent_id is not None and "parent_id" in data:
            self._parent_check(
                step_id=step.id, run_id=step.run_id, parent_id=step.parent_id, label=label
            )

    def _step(self, data: dict, label: str) -> str:
        step = self.get(RunStep, data.get("id"), lock=True)
        data, cut = step_bounded(data)
        if step is None:
            _require(data, ("run_id", "name"), label=label, kind="step")
            if self.get(Run, data["run_id"]) is None:
                raise BadRequest(
                    f"{label}.run_id: no run {data['run_id']!r} recorded for this Agent."
                )
            step = new_row(
                RunStep,
                {
                    **{name: data[name] for name in ("id", *_STEP_FIELDS) if name in data},
                    "agent_id": self.agent.pk,
                    "run_id": data["run_id"],
                    "created_at": self.now,
                    "updated_at": self.now,
                    "started_at": data.get("started_at") or self.now,
                    "truncated": cut,
                    **step_search_fields(data),
                },
            )
            self._step_validate(step, data, label=label)
            self._create(RunStep, step, label=label)
            outcome = CREATED
        else:
            if "run_id" in data and data["run_id"] != step.run_id:
                raise BadRequest(
                    f"{label}.run_id: step {step.id!r} belongs to run {step.run_id!r} and "
                    "cannot move."
                )
            data["truncated"] = _truncated_after(step.truncated, data, cut)
            if step.id not in self.step_before and step.id not in self.new[RunStep]:
                self.step_before[step.id] = analytics.step_values(step)
            changed = _apply(step, data, (*_STEP_FIELDS, "truncated"))
            if not changed:
                return UNCHANGED
            if step_sources_changed(changed):
                sources = {name: getattr(step, name) for name in STEP_SOURCES}
                changed += _apply_search(step, step_search_fields(sources))
            self._step_validate(step, data, label=label)
            step.updated_at = self.now
            self._changed(RunStep, step, [*changed, "duration_ms", "updated_at"])
            outcome = UPDATED
        self.stepped.add(step.run_id)
        return outcome
