"""Storing checked scores: each new score a row written by `COPY` (VALUES lists on SQLite) in a
savepoint, the ids already recorded compared with what is asked, and the answer of each score
built from the same values."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.common.errors import Conflict
from apps.common.ids import new_id
from apps.scores.models import DataType, Score
from apps.scores.rendering import score_row_to_dict, score_to_dict
from apps.scores.services.parsing import MAX_ERRORS_NAMED, ScoreIn
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


def _among(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
    """`column` among `values`: one array parameter on PostgreSQL (a thousand placeholders
    cost psycopg more to split than the query costs to run), a list elsewhere."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


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
