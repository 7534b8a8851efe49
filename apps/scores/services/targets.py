"""Resolving scores' targets: each checked to be the Agent's run, step, message or conversation,
with the run and conversation it implies, every kind in one `UNION ALL` query."""

from __future__ import annotations

from typing import Any

from django.db import connection

from apps.activity.models import Conversation, Message, Run, RunStep
from apps.scores.models import TargetType
from apps.scores.services.parsing import TARGET_FIELDS, ScoreIn
from apps.scores.services.storing import _among
from apps.workspaces.models import Agent

# Per kind of target: what answers (kind, id, run_id, conversation_id), from which table.
_TARGET_SELECTS = {
    TargetType.RUN: ("'run', t.id, t.id, t.conversation_id", Run, False),
    TargetType.RUN_STEP: ("'run_step', t.id, t.run_id, r.conversation_id", RunStep, True),
    TargetType.MESSAGE: ("'message', t.id, t.run_id, t.conversation_id", Message, False),
    TargetType.CONVERSATION: ("'conversation', t.id, NULL, t.id", Conversation, False),
}


def _target_queries(agent_id: str, wanted: dict[str, list[str]]) -> tuple[str, list[Any]]:
    """One query answering (kind, id, run_id, conversation_id) for every target named; a
    step's conversation is its run's."""
    run_table = Run._meta.db_table
    parts, params = [], []
    for kind, ids in wanted.items():
        if not ids:
            continue
        columns, model, via_run = _TARGET_SELECTS[TargetType(kind)]
        join = (
            f"LEFT JOIN {run_table} r ON r.agent_id = t.agent_id AND r.id = t.run_id"
            if via_run
            else ""
        )
        among, among_params = _among("t.id", ids)
        parts.append(
            f"SELECT {columns} FROM {model._meta.db_table} t {join} "  # noqa: S608 - our tables and columns; values are parameters
            f"WHERE t.agent_id = %s AND {among}"
        )
        params += [agent_id, *among_params]
    return " UNION ALL ".join(parts), params


def _targets_resolve(agent: Agent, scores: list[ScoreIn], errors: list[str]) -> list[ScoreIn]:
    """Each score's target checked to be the Agent's, with the run and conversation it implies
    (one query); scores whose target is not found are named in errors."""
    wanted: dict[str, set[str]] = {kind: set() for kind in TargetType.values}
    for score in scores:
        wanted[score.target_type].add(score.target_id)
    found: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    if scores:
        sql, params = _target_queries(agent.pk, {k: sorted(v) for k, v in wanted.items()})
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            found = {(kind, id_): (run_id, conv) for kind, id_, run_id, conv in cursor.fetchall()}
    kept = []
    for score in scores:
        implied = found.get((score.target_type, score.target_id))
        if implied is None:
            field_name = next(k for k, v in TARGET_FIELDS.items() if v == score.target_type)
            what = score.target_type.replace("_", " ")
            errors.append(
                f"{score.label}.{field_name}: no {what} {score.target_id!r} of this Agent."
            )
            continue
        score.run_id, score.conversation_id = implied
        if score.target_type == TargetType.RUN_STEP:
            score.step_id = score.target_id
        elif score.target_type == TargetType.MESSAGE:
            score.message_id = score.target_id
        kept.append(score)
    return kept
