"""Applying run records to the batch's rows in memory (an ended run stays ended, a run never
moves to another conversation), and bringing each run whose steps were recorded in line with
them at flush: its totals the sum of its model steps' (a stated total must agree), its model,
tools, failed tools and retrieved documents gathered from its steps.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Sum

from apps.activity.models import END_STATES, Run, RunStatus, RunStep, StepKind, StepStatus
from apps.activity.recording.batch import CREATED, UNCHANGED, UPDATED, _apply, _require
from apps.activity.recording.inserts import new_row
from apps.activity.recording.reading import BatchReads
from apps.common.errors import BadRequest

# The run totals that its model steps may carry (see apps.activity.services).
STEP_TOTALS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "credits_charged",
)
_RUN_FIELDS = (
    "request_id", "model_id", "effort", "sdk_version", "protocol_version", *STEP_TOTALS,
    "tool_names", "failed_tool_names", "component_kinds", "error_code", "first_chunk_at",
    "completed_at", "total_turn_latency_ms", "created_at",
    "environment", "release", "tags", "metadata",
)  # fmt: skip
_RUN_STATE = (*_RUN_FIELDS, "user_id", "status", "conversation_id")


def _same_total(stated: Any, total: Any) -> bool:
    if stated is None or total is None:
        return stated is total
    return abs(float(stated) - float(total)) <= 1e-9 * max(1.0, abs(float(total)))


class RunRecords(BatchReads):
    """The `run` records of a batch, and the runs brought in line with their steps."""

    def _run_touch(self, run: Run) -> None:
        """Remember the run as it was before this batch (once), for the announcement."""
        if run.id not in self.run_before:
            self.run_before[run.id] = {name: getattr(run, name) for name in _RUN_STATE}

    def _run(self, data: dict, label: str) -> str:
        run = self.get(Run, data.get("id"), lock=True)
        stated = {name: (data[name], label) for name in STEP_TOTALS if name in data}
        if stated:
            run_id = run.id if run is not None else data.get("id")
            if run_id is not None:
                self.stated.setdefault(run_id, {}).update(stated)
        if "user_id" in data:
            self._user_of(data["user_id"], label=label)
        if run is None:
            _require(
                data, ("conversation_id", "request_id", "sdk_version"), label=label, kind="run"
            )
            conversation = self._conversation_of(data["conversation_id"], label=label)
            created_at = data.get("created_at") or self.now
            # Built positionally (inserts.new_row): Django's keyword constructor looked up
            # the defaults of twenty fields and made an id the record's then replaced.
            run = new_row(
                Run,
                {
                    **{name: data[name] for name in ("id", *_RUN_FIELDS) if name in data},
                    "agent_id": self.agent.pk,
                    "conversation_id": conversation.id,
                    "user_id": data.get("user_id", conversation.user_id),
                    "status": data.get("status", RunStatus.STREAMING),
                    "created_at": created_at,
                    "updated_at": data.get("updated_at") or created_at,
                },
            )
            run.agent = self.agent  # cached: the usage rollup reads its workspace
            self._create(Run, run, label=label)
            self.run_before[run.id] = None
            self.changed_runs.add(run.id)
            return CREATED
        if "conversation_id" in data and data["conversation_id"] != run.conversation_id:
            raise BadRequest(
                f"{label}.conversation_id: run {run.id!r} belongs to conversation "
                f"{run.conversation_id!r} and cannot move."
            )
        new_status = data.get("status", run.status)
        if new_status != run.status and run.status in END_STATES:
            raise BadRequest(
                f"{label}.status: run {run.id!r} already ended as {run.status!r}; an ended "
                f"run cannot become {new_status!r}."
            )
        self._run_touch(run)
        changed = _apply(run, data, _RUN_STATE)
        self._stamp_updated_at(run, data, changed)
        if not changed:
            return UNCHANGED
        self._changed(Run, run, changed)
        self.changed_runs.add(run.id)
        return UPDATED

    def _reconcile(self) -> None:
        """Bring each run whose steps were recorded (or whose totals were stated and which had
        steps before) in line with its steps (apps.activity.services' docstring)."""
        run_ids = sorted(
            self.stepped | {run_id for run_id in self.stated if run_id not in self.new[Run]}
        )
        if not run_ids:
            return
        for run_id in run_ids:
            self.get(Run, run_id, lock=True)
        steps = RunStep.objects.filter(agent=self.agent, run_id__in=run_ids)
        aggregates: dict[str, Any] = {}
        for name in STEP_TOTALS:
            aggregates[f"{name}__sum"] = Sum(name)
            aggregates[f"{name}__count"] = Count(name)
        sums: dict[str, dict[str, Any]] = {
            row["run_id"]: dict(row)
            for row in steps.filter(kind=StepKind.MODEL).values("run_id").annotate(**aggregates)
        }
        tools: dict[str, list[tuple[str, bool]]] = {}
        first_models: dict[str, str] = {}
        documents: dict[str, list[str]] = {}
        for run_id, kind, tool_name, model_id, status, retrieved in (
            steps.filter(kind__in=(StepKind.TOOL, StepKind.MODEL, StepKind.RETRIEVAL))
            .order_by("run_id", "started_at", "id")
            .values_list("run_id", "kind", "tool_name", "model_id", "status", "documents")
        ):
            if kind == StepKind.TOOL and tool_name:
                tools.setdefault(run_id, []).append((tool_name, status == StepStatus.FAILED))
            elif kind == StepKind.MODEL and model_id and run_id not in first_models:
                first_models[run_id] = model_id
            elif kind == StepKind.RETRIEVAL:
                for document in retrieved if isinstance(retrieved, list) else []:
                    document_id = (
                        document.get("document_id") if isinstance(document, dict) else None
                    )
                    if isinstance(document_id, str) and document_id:
                        documents.setdefault(run_id, []).append(document_id)
        for run_id in run_ids:
            run = self.rows[Run].get(run_id)
            if run is None:
                continue
            values: dict[str, Any] = {}
            row = sums.get(run_id)
            for name in STEP_TOTALS:
                if row is None or not row[f"{name}__count"]:
                    continue
                total = row[f"{name}__sum"]
                stated = self.stated.get(run_id, {}).get(name)
                if stated is not None and not _same_total(stated[0], total):
                    raise BadRequest(
                        f"{stated[1]}.{name}: {stated[0]} disagrees with the sum of run "
                        f"{run_id!r}'s model steps ({total}); a total its steps carry is their sum."
                    )
                values[name] = total
            if run.model_id is None and run_id in first_models:
                values["model_id"] = first_models[run_id]
            tool_names = list(run.tool_names)
            failed = list(run.failed_tool_names)
            for tool_name, tool_failed in tools.get(run_id, []):
                if tool_name not in tool_names:
                    tool_names.append(tool_name)
                if tool_failed and tool_name not in failed:
                    failed.append(tool_name)
            values["tool_names"] = tool_names
            values["failed_tool_names"] = failed
            used = list(run.document_ids)
            for document_id in documents.get(run_id, []):
                if document_id not in used:
                    used.append(document_id)
            values["document_ids"] = used
            self._run_touch(run)
            changed = _apply(run, values, values.keys())
            if changed:
                run.updated_at = self.now
                self._changed(Run, run, [*changed, "updated_at"])
                self.changed_runs.add(run_id)
