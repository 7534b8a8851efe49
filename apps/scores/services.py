"""Writes of scores and score configs: every rule about them lives here, once.

Scores come from three sources through the same checks:
- the API (`POST /v1/scores`, one or a batch of up to 1,000) and `/v1/ingest`'s `score`
  records: `scores_create`;
- end users' browser tokens (thumbs up or down on an assistant message of their own
  conversation): `feedback_give`, `feedback_withdraw`;
- owners and members in the console: `scores_create` with `source=console`.

A batch is validated whole before anything is written: every invalid item is named
(`scores[3].value: ...`) and nothing is kept. Targets are resolved with one query per kind of
target, the Agent's configs with one query, existing ids with one, and the new rows written with
one `INSERT ... ON CONFLICT DO NOTHING` (a concurrent write of the same id is then compared like
an earlier one), so a batch of 1,000 costs a handful of statements.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.activity.models import Conversation, Message, Run, RunStep
from apps.api.serializers import StrictDateTimeField
from apps.common.errors import BadRequest, Conflict, NotFound
from apps.scores.events import (
    RunFeedbackChanged,
    ScoresCreated,
    run_feedback_changed,
    scores_created,
)
from apps.scores.models import (
    CATEGORY_MAX_LENGTH,
    COMMENT_MAX_LENGTH,
    FEEDBACK_NAME,
    ID_MAX_LENGTH,
    NAME_MAX_LENGTH,
    DataType,
    Score,
    ScoreConfig,
    Source,
    TargetType,
)
from apps.workspaces.audit import audit_record, current_actor
from apps.workspaces.models import Agent

MAX_BATCH = 1000
# At most this many item errors are named in one 400 (the count says how many there were).
MAX_ERRORS_NAMED = 20
MAX_CATEGORIES = 50

TARGET_FIELDS = {
    "run_id": TargetType.RUN,
    "step_id": TargetType.RUN_STEP,
    "conversation_id": TargetType.CONVERSATION,
    "message_id": TargetType.MESSAGE,
}
INPUT_FIELDS = (*TARGET_FIELDS, "id", "name", "value", "data_type", "comment", "created_at")
_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:\-]+$")


def _label_order(error: str) -> tuple[int, str]:
    """Errors in the order of their items (`scores[12]` after `scores[3]`)."""
    match = re.match(r"^\w+\[(\d+)\]", error)
    return (int(match.group(1)) if match else -1, error)


class ItemError(Exception):
    """One item's problem, named `label.field: message`; collected into the batch's 400."""


@dataclass
class ScoreIn:
    """One score as asked for, checked for shape (not yet against targets and configs)."""

    label: str
    id: str | None
    target_type: str
    target_id: str
    name: str
    value: float | str | bool
    data_type: str | None
    comment: str | None
    created_at: datetime | None = None
    # Filled while resolving.
    run_id: str | None = None
    step_id: str | None = None
    conversation_id: str | None = None
    message_id: str | None = None
    extra: dict = field(default_factory=dict)


def _text(label: str, name: str, value: Any, *, max_length: int, allow_null: bool = False):
    if value is None and allow_null:
        return None
    if not isinstance(value, str):
        raise ItemError(f"{label}.{name}: must be a JSON string.")
    if "\x00" in value:
        raise ItemError(f"{label}.{name}: must not contain NUL characters.")
    if len(value) > max_length:
        raise ItemError(f"{label}.{name}: at most {max_length} characters.")
    return value


def _an_id(label: str, name: str, value: Any) -> str:
    value = _text(label, name, value, max_length=ID_MAX_LENGTH)
    if not value or not _ID_PATTERN.match(value):
        raise ItemError(f"{label}.{name}: must be 1 to {ID_MAX_LENGTH} letters, digits or _ . : -")
    return value


def score_input_parse(item: Any, label: str) -> ScoreIn:
    """One raw score (a JSON object), checked for shape; ItemError names the field."""
    if not isinstance(item, dict):
        raise ItemError(f"{label}: must be a JSON object.")
    unknown = sorted(set(item) - set(INPUT_FIELDS))
    if unknown:
        raise ItemError(
            f"{label}.{unknown[0]}: unknown field; allowed fields: {', '.join(INPUT_FIELDS)}."
        )
    targets = [name for name in TARGET_FIELDS if item.get(name) is not None]
    if len(targets) != 1:
        given = f"got {', '.join(targets)}" if targets else "got none"
        raise ItemError(
            f"{label}: name exactly one target: run_id, step_id, conversation_id or "
            f"message_id ({given})."
        )
    target_field = targets[0]
    target_id = _an_id(label, target_field, item[target_field])
    score_id = _an_id(label, "id", item["id"]) if item.get("id") is not None else None
    if "name" not in item:
        raise ItemError(f"{label}.name: required.")
    name = _text(label, "name", item["name"], max_length=NAME_MAX_LENGTH).strip()
    if not name:
        raise ItemError(f"{label}.name: must not be blank.")
    if "value" not in item or item["value"] is None:
        raise ItemError(f"{label}.value: required (a number, a category string or a boolean).")
    value = item["value"]
    data_type = item.get("data_type")
    if data_type is not None and data_type not in DataType.values:
        raise ItemError(f"{label}.data_type: must be one of: {', '.join(DataType.values)}.")
    if isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) > 1e300:
            raise ItemError(f"{label}.value: must be a finite number.")
        value = float(value)
    elif isinstance(value, str):
        value = _text(label, "value", value, max_length=CATEGORY_MAX_LENGTH)
        if not value.strip():
            raise ItemError(f"{label}.value: a category must not be blank.")
    else:
        raise ItemError(f"{label}.value: must be a number, a category string or a boolean.")
    comment = _text(
        label, "comment", item.get("comment"), max_length=COMMENT_MAX_LENGTH, allow_null=True
    )
    created_at = None
    if item.get("created_at") is not None:
        try:
            created_at = StrictDateTimeField().to_internal_value(item["created_at"])
        except Exception as exc:  # DRF's ValidationError: its first message
            detail = getattr(exc, "detail", [str(exc)])
            raise ItemError(f"{label}.created_at: {detail[0]}") from None
    return ScoreIn(
        label=label,
        id=score_id,
        target_type=TARGET_FIELDS[target_field],
        target_id=target_id,
        name=name,
        value=value,
        data_type=data_type,
        comment=comment or None,
        created_at=created_at,
    )


def _type_of(value: float | str | bool) -> str:
    if isinstance(value, bool):
        return DataType.BOOLEAN
    if isinstance(value, float):
        return DataType.NUMERIC
    return DataType.CATEGORICAL


def _number_text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _check_value(score: ScoreIn, config: ScoreConfig | None) -> None:
    """The value against its data type and, when its name has an active config, the config."""
    label, value = score.label, score.value
    actual = _type_of(value)
    wanted = score.data_type or (config.data_type if config else actual)
    if config is not None and wanted != config.data_type:
        raise ItemError(
            f"{label}.data_type: score config '{config.name}' says {config.data_type}; "
            f"got {wanted}."
        )
    if wanted != actual:
        examples = {
            DataType.NUMERIC: "a number",
            DataType.CATEGORICAL: "a category string",
            DataType.BOOLEAN: "true or false",
        }
        if config is not None:
            raise ItemError(
                f"{label}.value: score config '{config.name}' says {wanted}: "
                f"{examples[DataType(wanted)]}; got {examples[DataType(actual)]}."
            )
        raise ItemError(f"{label}.value: a {wanted} score's value is {examples[DataType(wanted)]}.")
    score.data_type = wanted
    if config is None:
        return
    rule = f"score config '{config.name}'"
    if wanted == DataType.NUMERIC:
        assert isinstance(value, float)
        if config.min_value is not None and value < config.min_value:
            raise ItemError(
                f"{label}.value: {rule} allows {_number_text(config.min_value)} to "
                f"{_number_text(config.max_value) or 'any'}; {value:g} is below the minimum."
            )
        if config.max_value is not None and value > config.max_value:
            raise ItemError(
                f"{label}.value: {rule} allows {_number_text(config.min_value) or 'any'} to "
                f"{_number_text(config.max_value)}; {value:g} is above the maximum."
            )
    elif wanted == DataType.CATEGORICAL and value not in config.categories:
        raise ItemError(
            f"{label}.value: {rule} allows the categories {', '.join(config.categories)}; "
            f"got {value!r}."
        )


def _resolve_targets(agent: Agent, scores: list[ScoreIn], errors: list[str]) -> list[ScoreIn]:
    """Each score's target checked to be the Agent's, with the run and conversation it implies.
    One query per kind of target named; scores whose target is not found are named in errors."""
    wanted: dict[str, set[str]] = {kind: set() for kind in TargetType.values}
    for score in scores:
        wanted[score.target_type].add(score.target_id)
    steps = (
        dict(
            RunStep.objects.filter(agent=agent, id__in=wanted[TargetType.RUN_STEP]).values_list(
                "id", "run_id"
            )
        )
        if wanted[TargetType.RUN_STEP]
        else {}
    )
    messages = (
        {
            row[0]: row[1:]
            for row in Message.objects.filter(
                agent=agent, id__in=wanted[TargetType.MESSAGE]
            ).values_list("id", "conversation_id", "run_id")
        }
        if wanted[TargetType.MESSAGE]
        else {}
    )
    run_ids = wanted[TargetType.RUN] | set(steps.values())
    runs = (
        dict(Run.objects.filter(agent=agent, id__in=run_ids).values_list("id", "conversation_id"))
        if run_ids
        else {}
    )
    conversations = (
        set(
            Conversation.objects.filter(
                agent=agent, id__in=wanted[TargetType.CONVERSATION]
            ).values_list("id", flat=True)
        )
        if wanted[TargetType.CONVERSATION]
        else set()
    )
    kept = []
    for score in scores:
        target = score.target_id
        if score.target_type == TargetType.RUN and target in runs:
            score.run_id, score.conversation_id = target, runs[target]
        elif score.target_type == TargetType.RUN_STEP and target in steps:
            score.step_id, score.run_id = target, steps[target]
            score.conversation_id = runs.get(steps[target])
        elif score.target_type == TargetType.MESSAGE and target in messages:
            score.message_id = target
            score.conversation_id, score.run_id = messages[target]
        elif score.target_type == TargetType.CONVERSATION and target in conversations:
            score.conversation_id = target
        else:
            field_name = next(k for k, v in TARGET_FIELDS.items() if v == score.target_type)
            what = score.target_type.replace("_", " ")
            errors.append(f"{score.label}.{field_name}: no {what} {target!r} of this Agent.")
            continue
        kept.append(score)
    return kept


def _configs_by_name(agent: Agent, names: Iterable[str]) -> dict[str, ScoreConfig]:
    names = set(names)
    if not names:
        return {}
    return {
        config.name: config
        for config in ScoreConfig.objects.filter(
            agent=agent, name__in=names, archived_at__isnull=True
        )
    }


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


def _row(agent: Agent, score: ScoreIn, *, source: str, author: dict, now: datetime) -> Score:
    value: Any = score.value
    return Score(
        id=score.id or Score._meta.get_field("id").get_default(),
        agent_id=agent.pk,
        target_type=score.target_type,
        run_id=score.run_id,
        step_id=score.step_id,
        conversation_id=score.conversation_id,
        message_id=score.message_id,
        name=score.name,
        data_type=str(score.data_type),
        number_value=value if score.data_type == DataType.NUMERIC else None,
        string_value=value if score.data_type == DataType.CATEGORICAL else None,
        boolean_value=value if score.data_type == DataType.BOOLEAN else None,
        comment=score.comment,
        source=source,
        api_key_id=author.get("api_key_id"),
        end_user_id=author.get("end_user_id"),
        created_by_id=author.get("created_by_id"),
        created_at=score.created_at or now,
        updated_at=now,
    )


def _insert_new(rows: list[Score]) -> set[str]:
    """INSERT the rows, skipping ids the Agent already has (a concurrent write of the same id):
    one statement; returns the ids written.

    On PostgreSQL the rows are COPYed (psycopg writes them in C) into a scratch table of the
    transaction, then inserted from it: a VALUES list of 1,000 rows has 19,000 placeholders,
    and splitting such a query string alone cost psycopg 600 ms a batch; arrays through
    `unnest` were dumped in Python (docs/performance.md, "Scores"). Elsewhere (the SQLite
    default) a VALUES list per chunk."""
    if not rows:
        return set()
    fields = [f for f in Score._meta.concrete_fields if f.name != "row"]
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    table = connection.ops.quote_name(Score._meta.db_table)
    written: set[str] = set()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # COPY into a scratch table of this transaction (psycopg writes COPY rows in C),
            # then one INSERT ... SELECT that skips the ids already there.
            cursor.execute(
                f"CREATE TEMP TABLE scores_stage ON COMMIT DROP AS "  # noqa: S608 - our table, our columns
                f"SELECT {columns} FROM {table} WITH NO DATA"
            )
            statement = f"COPY scores_stage ({columns}) FROM STDIN"
            with connection.wrap_database_errors, cursor.cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row([getattr(row, f.attname) for f in fields])
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM scores_stage "  # noqa: S608 - our table, our columns
                "ON CONFLICT (agent_id, id) DO NOTHING RETURNING id"
            )
            written = {found for (found,) in cursor.fetchall()}
            cursor.execute("DROP TABLE scores_stage")
            return written
        one = "(" + ", ".join(["%s"] * len(fields)) + ")"
        chunk = max(1, min(MAX_BATCH, 900 // len(fields)))
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            params: list[Any] = []
            for row in part:
                params.extend(
                    f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields
                )
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {', '.join([one] * len(part))} "  # noqa: S608 - our table, our columns; values are parameters
                "ON CONFLICT (agent_id, id) DO NOTHING RETURNING id",
                params,
            )
            written.update(found for (found,) in cursor.fetchall())
    return written


@dataclass
class ScoresResult:
    """The scores of a write in the order asked, and which of them it created."""

    scores: list[Score]
    created: set[str]

    @property
    def outcomes(self) -> list[str]:
        return ["created" if s.id in self.created else "unchanged" for s in self.scores]


def _raise_collected(errors: list[str], total: int) -> None:
    if not errors:
        return
    named = "; ".join(error.rstrip(".") for error in errors[:MAX_ERRORS_NAMED])
    more = f" (and {len(errors) - MAX_ERRORS_NAMED} more)" if len(errors) > MAX_ERRORS_NAMED else ""
    if total == 1:
        raise BadRequest(f"{named}.")
    raise BadRequest(
        f"{len(errors)} of {total} scores are invalid; nothing was recorded: {named}{more}."
    )


@dataclass
class ScoreBatch:
    """A body's scores checked for shape, and the problems of those that are not."""

    scores: list[ScoreIn]
    errors: list[str]
    total: int
    single: bool


def scores_parse(items: Any, *, label: str = "scores") -> ScoreBatch:
    """A body of one score (object) or a batch (array of 1 to 1,000), every item's shape
    checked and each problem kept (scores_create names them all with the others)."""
    single = isinstance(items, dict)
    raw = [items] if single else items
    if not isinstance(raw, list):
        raise BadRequest("The body must be a score (JSON object) or an array of scores.")
    if not raw:
        raise BadRequest("The array must hold at least one score.")
    if len(raw) > MAX_BATCH:
        raise BadRequest(f"At most {MAX_BATCH} scores per request; got {len(raw)}.")
    parsed, errors = [], []
    for index, item in enumerate(raw):
        try:
            parsed.append(score_input_parse(item, "score" if single else f"{label}[{index}]"))
        except ItemError as exc:
            errors.append(str(exc))
    return ScoreBatch(scores=parsed, errors=errors, total=len(raw), single=single)


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
    author = author or {}
    if isinstance(scores, ScoreBatch):
        errors, total, scores = list(scores.errors), scores.total, scores.scores
    else:
        errors, total = [], len(scores)
    # The same id twice in one batch: one score when the bodies agree.
    by_id: dict[str, ScoreIn] = {}
    for score in scores:
        if score.id is None:
            continue
        first = by_id.setdefault(score.id, score)
        if first is not score and (
            first.target_type,
            first.target_id,
            first.name,
            first.value,
            first.data_type,
            first.comment,
        ) != (
            score.target_type,
            score.target_id,
            score.name,
            score.value,
            score.data_type,
            score.comment,
        ):
            errors.append(
                f"{score.label}.id: {score.id!r} is also {first.label}, with another body."
            )
    configs = _configs_by_name(agent, (score.name for score in scores))
    checked = []
    for score in scores:
        try:
            _check_value(score, configs.get(score.name))
            checked.append(score)
        except ItemError as exc:
            errors.append(str(exc))
    with transaction.atomic():
        resolved = _resolve_targets(agent, checked, errors)
        _raise_collected(sorted(errors, key=_label_order), total)
        ids = [score.id for score in resolved if score.id]
        existing = (
            {row.id: row for row in Score.objects.filter(agent=agent, id__in=ids)} if ids else {}
        )
        conflicts = [
            score
            for score in resolved
            if score.id in existing and not _same(existing[score.id], score)
        ]
        if conflicts:
            named = ", ".join(
                f"{score.label} ({score.id})" for score in conflicts[:MAX_ERRORS_NAMED]
            )
            raise Conflict(
                f"A score with this id already exists with another body: {named}. "
                "Send the same body again, or use a new id."
            )
        now = timezone.now()
        rows: dict[str, Score] = {}
        ordered: list[Score] = []
        for score in resolved:
            if score.id in existing:
                ordered.append(existing[score.id])
                continue
            if score.id in rows:
                ordered.append(rows[score.id])
                continue
            row = _row(agent, score, source=source, author=author, now=now)
            rows[row.id] = row
            ordered.append(row)
        written = _insert_new(list(rows.values()))
        raced = [rid for rid in rows if rid not in written]
        if raced:  # written by a concurrent request since we looked: compare like an earlier one
            stored = {row.id: row for row in Score.objects.filter(agent=agent, id__in=raced)}
            wanted = {score.id: score for score in resolved if score.id in stored}
            differ = [rid for rid, score in wanted.items() if not _same(stored[rid], score)]
            if differ:
                raise Conflict(
                    f"A score with this id was written concurrently with another body: "
                    f"{', '.join(differ[:MAX_ERRORS_NAMED])}."
                )
            ordered = [stored.get(row.id, row) for row in ordered]
        created = [rows[rid] for rid in rows if rid in written]
        if created:
            scores_created.announce(ScoresCreated(agent_id=agent.pk, scores=created))
    return ScoresResult(scores=ordered, created=written)


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


# --- deleting -----------------------------------------------------------------------------------


def score_delete(*, agent: Agent, score_id: str) -> None:
    """One score removed over the API; recorded like the console's bulk delete (who removed a
    judgement is worth knowing)."""
    with transaction.atomic():
        deleted, _ = Score.objects.filter(agent=agent, id=score_id).delete()
        if not deleted:
            raise NotFound(f"No score {score_id!r} of this Agent.")
        audit_record(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            action="score.deleted",
            target_type="score",
            target_id=score_id,
            target_name=score_id,
            changes={"count": 1},
        )


def scores_delete(*, agent: Agent, score_ids: list[str]) -> int:
    """The console's bulk delete: the Agent's scores among `score_ids` (others are ignored)."""
    with transaction.atomic():
        deleted, _ = Score.objects.filter(agent=agent, id__in=score_ids[:MAX_BATCH]).delete()
        if deleted:
            audit_record(
                workspace_id=agent.workspace_id,
                agent_id=agent.pk,
                action="score.deleted",
                target_type="score",
                target_name=f"{deleted} score(s)",
                changes={"count": deleted},
            )
    return deleted


# --- feedback from end users (browser tokens) ---------------------------------------------------


def feedback_give(
    *, agent: Agent, end_user_id: str, message_id: str, value: bool, comment: str | None
) -> tuple[Score, bool]:
    """An end user's thumbs up (true) or down on an assistant message of one of their own
    conversations: one per message and user, a new vote replaces the previous one. Another
    user's message, a user's own message, another Agent's: not found, nothing written.
    Returns the score and whether it is new."""
    message = (
        Message.objects.filter(agent=agent, id=message_id)
        .select_related("conversation")
        .only("id", "role", "run_id", "conversation_id", "conversation__user_id")
        .first()
        if 0 < len(message_id) <= ID_MAX_LENGTH and "\x00" not in message_id
        else None
    )
    if message is None or message.conversation.user_id != end_user_id:
        raise NotFound("No such message in your conversations.")
    if message.role != Message.Role.ASSISTANT:
        raise BadRequest("Feedback is given on the assistant's messages only.")
    now = timezone.now()
    for _attempt in (1, 2):
        try:
            with transaction.atomic():
                existing = (
                    Score.objects.select_for_update()
                    .filter(
                        agent=agent,
                        message_id=message.id,
                        end_user_id=end_user_id,
                        name=FEEDBACK_NAME,
                        source=Source.END_USER,
                    )
                    .first()
                )
                if existing is not None:
                    existing.boolean_value = value
                    existing.comment = comment or None
                    existing.updated_at = now
                    existing.save(update_fields=["boolean_value", "comment", "updated_at"])
                    _run_feedback_announce(agent_id=agent.pk, run_id=existing.run_id)
                    return existing, False
                score = Score.objects.create(
                    agent=agent,
                    target_type=TargetType.MESSAGE,
                    message_id=message.id,
                    conversation_id=message.conversation_id,
                    run_id=message.run_id,
                    name=FEEDBACK_NAME,
                    data_type=DataType.BOOLEAN,
                    boolean_value=value,
                    comment=comment or None,
                    source=Source.END_USER,
                    end_user_id=end_user_id,
                    created_at=now,
                    updated_at=now,
                )
                scores_created.announce(ScoresCreated(agent_id=agent.pk, scores=[score]))
                _run_feedback_announce(agent_id=agent.pk, run_id=score.run_id)
                return score, True
        except IntegrityError:  # the same user's other tab voted first: update that one
            continue
    raise Conflict("Your feedback changed concurrently; send it again.")


def feedback_withdraw(*, agent: Agent, end_user_id: str, message_id: str) -> None:
    with transaction.atomic():
        mine = Score.objects.filter(
            agent=agent,
            message_id=message_id,
            end_user_id=end_user_id,
            name=FEEDBACK_NAME,
            source=Source.END_USER,
        )
        run_ids = set(mine.values_list("run_id", flat=True))
        deleted, _ = mine.delete()
        if not deleted:
            raise NotFound("No feedback of yours on this message.")
        for run_id in run_ids:
            _run_feedback_announce(agent_id=agent.pk, run_id=run_id)


def _run_feedback_announce(*, agent_id: str, run_id: str | None) -> None:
    """Tell listeners whether the run now has any end user's thumbs down (in the transaction
    that changed it)."""
    if run_id is None:
        return
    negative = Score.objects.filter(
        agent_id=agent_id,
        run_id=run_id,
        name=FEEDBACK_NAME,
        source=Source.END_USER,
        boolean_value=False,
    ).exists()
    run_feedback_changed.announce(
        RunFeedbackChanged(agent_id=agent_id, run_id=run_id, negative=negative)
    )


# --- score configs ------------------------------------------------------------------------------

CONFIG_CREATE_FIELDS = ("name", "data_type", "min_value", "max_value", "categories", "description")
CONFIG_UPDATE_FIELDS = ("min_value", "max_value", "categories", "description", "archived")


def _config_values(data: dict, *, data_type: str, current: ScoreConfig | None = None) -> dict:
    """min/max, categories and description checked for `data_type`; BadRequest names the rule."""
    values: dict[str, Any] = {}
    for name in ("min_value", "max_value"):
        if name in data:
            value = data[name]
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise BadRequest(f"{name}: must be a finite number or null.")
            values[name] = None if value is None else float(value)
    if "categories" in data:
        categories = data["categories"]
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            raise BadRequest("categories: must be an array of strings.")
        cleaned = [c.strip() for c in categories]
        if any(not c or len(c) > CATEGORY_MAX_LENGTH or "\x00" in c for c in cleaned):
            raise BadRequest(f"categories: each must be 1 to {CATEGORY_MAX_LENGTH} characters.")
        if len(set(cleaned)) != len(cleaned):
            raise BadRequest("categories: each category once.")
        if len(cleaned) > MAX_CATEGORIES:
            raise BadRequest(f"categories: at most {MAX_CATEGORIES}.")
        values["categories"] = cleaned
    if "description" in data:
        description = data["description"]
        if description is None:
            description = ""
        if not isinstance(description, str) or len(description) > 500:
            raise BadRequest("description: a string of at most 500 characters.")
        values["description"] = description.strip()
    low = values.get("min_value", current.min_value if current else None)
    high = values.get("max_value", current.max_value if current else None)
    categories = values.get("categories", current.categories if current else [])
    if data_type != DataType.NUMERIC and (low is not None or high is not None):
        raise BadRequest(
            f"min_value, max_value: only a numeric config has a range; this is {data_type}."
        )
    if low is not None and high is not None and low > high:
        raise BadRequest("min_value: must not be above max_value.")
    if data_type == DataType.CATEGORICAL and not categories:
        raise BadRequest("categories: a categorical config needs at least one category.")
    if data_type != DataType.CATEGORICAL and categories:
        raise BadRequest(
            f"categories: only a categorical config has categories; this is {data_type}."
        )
    return values


def _unknown(data: dict, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown field; allowed fields: {', '.join(allowed)}.")


def score_config_create(*, agent: Agent, data: Any) -> ScoreConfig:
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.")
    _unknown(data, CONFIG_CREATE_FIELDS)
    name = data.get("name")
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > NAME_MAX_LENGTH
        or "\x00" in name
    ):
        raise BadRequest(f"name: required, 1 to {NAME_MAX_LENGTH} characters.")
    data_type = data.get("data_type")
    if data_type not in DataType.values:
        raise BadRequest(f"data_type: required, one of: {', '.join(DataType.values)}.")
    values = _config_values(data, data_type=data_type)
    now = timezone.now()
    config = ScoreConfig(
        agent=agent,
        name=name.strip(),
        data_type=data_type,
        created_at=now,
        updated_at=now,
        **values,
    )
    try:
        with transaction.atomic():
            config.save(force_insert=True)
            audit_record(
                workspace_id=agent.workspace_id,
                agent_id=agent.pk,
                action="score_config.created",
                target_type="score_config",
                target_id=config.id,
                target_name=config.name,
                changes={"data_type": data_type, **values},
            )
    except IntegrityError:
        raise Conflict(
            f"name: the Agent already has a score config named {config.name!r}."
        ) from None
    return config


def score_config_get(*, agent: Agent, config_id: str) -> ScoreConfig:
    config = ScoreConfig.objects.filter(agent=agent, id=config_id[:40]).first()
    if config is None:
        raise NotFound(f"No score config {config_id!r} of this Agent.")
    return config


def score_config_update(*, agent: Agent, config_id: str, data: Any) -> ScoreConfig:
    """Range, categories, description and `archived` change; name and data type do not (the
    scores already given under the name keep their meaning)."""
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.")
    for fixed in ("name", "data_type"):
        if fixed in data:
            raise BadRequest(
                f"{fixed}: cannot change (scores were given under it); archive this config "
                "and create another."
            )
    _unknown(data, CONFIG_UPDATE_FIELDS)
    with transaction.atomic():
        config = score_config_get(agent=agent, config_id=config_id)
        config = ScoreConfig.objects.select_for_update().get(pk=config.pk)
        values = _config_values(data, data_type=config.data_type, current=config)
        if "archived" in data:
            if not isinstance(data["archived"], bool):
                raise BadRequest("archived: must be true or false.")
            if data["archived"] != config.archived:
                values["archived_at"] = timezone.now() if data["archived"] else None
        changes = {name: value for name, value in values.items() if getattr(config, name) != value}
        if not changes:
            return config
        for name, value in changes.items():
            setattr(config, name, value)
        config.updated_at = timezone.now()
        config.save(update_fields=[*changes, "updated_at"])
        action = "score_config.updated"
        if set(changes) == {"archived_at"}:
            action = "score_config.archived" if config.archived else "score_config.restored"
        audit_record(
            workspace_id=agent.workspace_id,
            agent_id=agent.pk,
            action=action,
            target_type="score_config",
            target_id=config.id,
            target_name=config.name,
            changes={
                k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in changes.items()
            },
        )
    return config


def score_config_archive(*, agent: Agent, config_id: str, archived: bool = True) -> ScoreConfig:
    return score_config_update(agent=agent, config_id=config_id, data={"archived": archived})
