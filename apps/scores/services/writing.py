"""Recording scores from the API, `/v1/ingest` and the console: all or nothing, in a few statements.

A batch of 1,000 costs: one query for the Agent's configs of the names used, one for every
target (all kinds in one `UNION ALL`), one probe for client ids already recorded (only when the
batch names ids), one `COPY` of the new rows, and the webhook's lookup. No model instance is
built for a new score: its row is a tuple for `COPY` and its answer a dict rendered from the same
values (docs/performance.md, "Scores").

An id the Agent already has is the same score when the body is the same (nothing written) and a
409 naming it when it differs. A concurrent request writing the same id between the probe and the
`COPY` makes the `COPY` fail inside a savepoint; the rows then go in with `ON CONFLICT DO
NOTHING`, and the ids another request wrote are compared like earlier ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.activity.models import Conversation, Message, Run, RunStep
from apps.common.errors import BadRequest, Conflict
from apps.common.ids import new_id
from apps.scores.events import ScoresCreated, scores_created
from apps.scores.models import DataType, Score, ScoreConfig, Source, TargetType
from apps.scores.rendering import score_row_to_dict, score_to_dict
from apps.scores.services.parsing import (
    MAX_ERRORS_NAMED,
    TARGET_FIELDS,
    ItemError,
    ScoreBatch,
    ScoreIn,
    check_value,
    label_order,
    raise_collected,
    score_input_parse,
)
from apps.workspaces.audit import current_actor
from apps.workspaces.models import Agent

# The columns a new row fills, in the table's order (`row` is the database's).
_FIELDS = [f for f in Score._meta.concrete_fields if f.name != "row"]
COLUMNS = tuple(str(f.attname) for f in _FIELDS)


@dataclass
class ScoresResult:
    """The scores of a write in the order asked, as the API shows them, and which of them it
    created."""

    data: list[dict]
    created: set[str]

    @property
    def outcomes(self) -> list[str]:
        return ["created" if d["id"] in self.created else "unchanged" for d in self.data]


def scores_create(
    *,
    agent: Agent,
    scores: list[ScoreIn] | ScoreBatch,
    source: str = Source.API,
    author: dict | None = None,
) -> ScoresResult:
    """Record well-formed scores (scores_parse) all or nothing.

    Each target must be the Agent's; a name with an active config is checked against it; an
    id the Agent already has is the same score when the body is the same (nothing written)
    and a 409 naming it when it differs. New scores are announced (`score.created`)."""
    if isinstance(scores, ScoreBatch):
        errors, total, items = list(scores.errors), scores.total, scores.scores
    else:
        errors, total, items = [], len(scores), scores
    _same_id_check(items, errors)
    checked = _values_check(agent, items, errors)
    with transaction.atomic():
        resolved = _targets_resolve(agent, checked, errors)
        raise_collected(sorted(errors, key=label_order), total)
        result = _store(agent, resolved, source=source, author=author or {})
        if result.created:
            created = [d for d in result.data if d["id"] in result.created]
            unique = list({d["id"]: d for d in created}.values())
            scores_created.announce(ScoresCreated(agent_id=agent.pk, data=unique))
    return result


def _body(score: ScoreIn) -> tuple:
    return (
        score.target_type,
        score.target_id,
        score.name,
        score.value,
        score.data_type,
        score.comment,
    )


def _same_id_check(scores: list[ScoreIn], errors: list[str]) -> None:
    """The same id twice in one batch: one score when the bodies agree, else an item error."""
    by_id: dict[str, ScoreIn] = {}
    for score in scores:
        if score.id is None:
            continue
        first = by_id.setdefault(score.id, score)
        if first is not score and _body(first) != _body(score):
            errors.append(
                f"{score.label}.id: {score.id!r} is also {first.label}, with another body."
            )


def _values_check(agent: Agent, scores: list[ScoreIn], errors: list[str]) -> list[ScoreIn]:
    """Each value against its data type and its name's active config (one query)."""
    names = {score.name for score in scores}
    configs = (
        {
            config.name: config
            for config in ScoreConfig.objects.filter(
                agent=agent, name__in=names, archived_at__isnull=True
            )
        }
        if names
        else {}
    )
    checked = []
    for score in scores:
        try:
            check_value(score, configs.get(score.name))
            checked.append(score)
        except ItemError as exc:
            errors.append(str(exc))
    return checked


def _among(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
    """`column` among `values`: one array parameter on PostgreSQL (a thousand placeholders
    cost psycopg more to split than the query costs to run), a list elsewhere."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


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


def _same(existing: Score, score: ScoreIn) -> bool:
    """Whether a stored score is what `score` asks for (same id + same body = same score)."""
    return (
        existing.target_type == score.target_type
        and existing.target_id == score.target_id
        and existing.name == score.name
        and existing.data_type == score.data_type
        and existing.value == score.value
        and (existing.comment or None) == score.comment
        and (score.created_at is None or existing.created_at == score.created_at)
    )


def _row(
    agent_id: str, score: ScoreIn, row_id: str, *, source: str, author: dict, now: datetime
) -> dict[str, Any]:
    """A new score's column values (by attribute name), for COPY and for its answer alike."""
    value, data_type = score.value, str(score.data_type)
    return {
        "id": row_id,
        "agent_id": agent_id,
        "target_type": score.target_type,
        "run_id": score.run_id,
        "step_id": score.step_id,
        "conversation_id": score.conversation_id,
        "message_id": score.message_id,
        "name": score.name,
        "data_type": data_type,
        "number_value": value if data_type == DataType.NUMERIC else None,
        "string_value": value if data_type == DataType.CATEGORICAL else None,
        "boolean_value": value if data_type == DataType.BOOLEAN else None,
        "comment": score.comment,
        "source": source,
        "api_key_id": author.get("api_key_id"),
        "end_user_id": author.get("end_user_id"),
        "created_by_id": author.get("created_by_id"),
        "created_at": score.created_at or now,
        "updated_at": now,
    }


def _stored(agent: Agent, ids: Iterable[str]) -> dict[str, Score]:
    """The Agent's recorded scores among `ids` (one query, the ids as one array parameter)."""
    ids = list(ids)
    if not ids:
        return {}
    among, params = _among("id", ids)
    found = Score.objects.raw(
        f"SELECT * FROM {Score._meta.db_table} WHERE agent_id = %s AND {among}",  # noqa: S608 - our table; values are parameters
        [agent.pk, *params],
    )
    return {row.id: row for row in found}


def _conflicts_raise(scores: list[ScoreIn], stored: dict[str, Score], *, concurrent: bool) -> None:
    differ = [s for s in scores if s.id in stored and not _same(stored[s.id], s)]
    if not differ:
        return
    named = ", ".join(f"{s.label} ({s.id})" for s in differ[:MAX_ERRORS_NAMED])
    if concurrent:
        raise Conflict(f"A score with this id was written concurrently with another body: {named}.")
    raise Conflict(
        f"A score with this id already exists with another body: {named}. "
        "Send the same body again, or use a new id."
    )


def _store(agent: Agent, scores: list[ScoreIn], *, source: str, author: dict) -> ScoresResult:
    """Write the scores not recorded yet; the answer for each, in order.

    Every row is first written as new (the unique index is then the only probe); when one of
    the ids is there already (a batch sent again), the recorded ones are read and compared and
    the rest written, skipping any a concurrent request wrote meanwhile."""
    now = timezone.now()
    rows: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for score in scores:
        row_id = score.id or new_id("score")
        order.append(row_id)
        if row_id not in rows:
            rows[row_id] = _row(agent.pk, score, row_id, source=source, author=author, now=now)
    stored: dict[str, Score] = {}
    if _insert_all(list(rows.values())):
        written = set(rows)
    else:
        stored = _stored(agent, {score.id for score in scores if score.id})
        _conflicts_raise(scores, stored, concurrent=False)
        written = _insert_skipping([row for key, row in rows.items() if key not in stored])
        raced = [key for key in rows if key not in written and key not in stored]
        if raced:  # written by a concurrent request since we looked: compare like an earlier one
            stored.update(_stored(agent, raced))
            _conflicts_raise(scores, stored, concurrent=True)
    data = {key: score_row_to_dict(rows[key]) for key in written}
    data.update((key, score_to_dict(row)) for key, row in stored.items())
    return ScoresResult(data=[data[key] for key in order], created=written)


def _table_and_columns() -> tuple[str, str]:
    return (
        connection.ops.quote_name(Score._meta.db_table),
        ", ".join(connection.ops.quote_name(str(f.column)) for f in _FIELDS),
    )


def _insert_all(rows: list[dict[str, Any]]) -> bool:
    """INSERT every row, in a savepoint; false (nothing written) when an id is taken.

    On PostgreSQL the rows are COPYed (psycopg writes them in C): a VALUES list of 1,000 rows
    has 19,000 placeholders, whose splitting alone cost psycopg 600 ms a batch
    (docs/performance.md, "Scores"). Elsewhere (the SQLite default) VALUES lists."""
    if not rows:
        return True
    table, columns = _table_and_columns()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                _copy(cursor, f"COPY {table} ({columns}) FROM STDIN", rows)
            else:
                _insert_values(cursor, rows, on_conflict="")
    except IntegrityError:
        return False
    return True


def _insert_skipping(rows: list[dict[str, Any]]) -> set[str]:
    """INSERT the rows whose id is free, skipping the others; returns the ids written. On
    PostgreSQL through a scratch table of the transaction, COPYed, then one INSERT."""
    if not rows:
        return set()
    table, columns = _table_and_columns()
    skip = "ON CONFLICT (agent_id, id) DO NOTHING RETURNING id"
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            return _insert_values(cursor, rows, on_conflict=skip)
        cursor.execute(
            f"CREATE TEMP TABLE scores_stage ON COMMIT DROP AS "  # noqa: S608 - our table, our columns
            f"SELECT {columns} FROM {table} WITH NO DATA"
        )
        _copy(cursor, f"COPY scores_stage ({columns}) FROM STDIN", rows)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM scores_stage {skip}"  # noqa: S608 - our table, our columns
        )
        written = {found for (found,) in cursor.fetchall()}
        cursor.execute("DROP TABLE scores_stage")
    return written


def _copy(cursor, statement: str, rows: list[dict[str, Any]]) -> None:
    with connection.wrap_database_errors, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([row[name] for name in COLUMNS])


def _insert_values(cursor, rows: list[dict[str, Any]], *, on_conflict: str) -> set[str]:
    """VALUES lists of at most 900 parameters (SQLite's limit is 999)."""
    table, columns = _table_and_columns()
    one = "(" + ", ".join(["%s"] * len(_FIELDS)) + ")"
    chunk = max(1, 900 // len(_FIELDS))
    written: set[str] = set()
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        params = [
            field.get_db_prep_save(row[field.attname], connection)
            for row in part
            for field in _FIELDS
        ]
        cursor.execute(
            f"INSERT INTO {table} ({columns}) VALUES {', '.join([one] * len(part))} "  # noqa: S608 - our table, our columns; values are parameters
            + on_conflict,
            params,
        )
        if on_conflict:
            written.update(found for (found,) in cursor.fetchall())
        else:
            written.update(row["id"] for row in part)
    return written


# --- /v1/ingest's `score` records (registered in apps.scores.apps) ---------------------------


def scores_ingest_parse(item: dict, label: str) -> dict:
    try:
        return {"score": score_input_parse(item, label)}
    except ItemError as exc:
        raise BadRequest(str(exc)) from None


def scores_ingest(*, agent: Agent, items: list[tuple[dict, str]]) -> list[str]:
    """The `score` records of one ingest batch, inside its transaction; who gave them is the
    key the ingest request was made with."""
    actor = current_actor()
    author = {"api_key_id": actor.id} if actor.type in ("api_key", "oauth_app") else {}
    result = scores_create(
        agent=agent, scores=[fields["score"] for fields, _label in items], author=author
    )
    return result.outcomes
