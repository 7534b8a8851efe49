"""Recording scores from the API, `/v1/ingest` and the console: all or nothing, in a few statements.

This module checks a batch and records it; `targets` resolves the targets and `storing` writes the
rows. A batch of 1,000 costs: one query for the Agent's configs of the names used, one for every
target (all kinds in one `UNION ALL`), one probe for client ids already recorded (only when the
batch names ids), one `COPY` of the new rows, and the webhook's lookup. No model instance is built
for a new score: its row is a tuple for `COPY` and its answer a dict rendered from the same values
(docs/performance.md, "Scores").

An id the Agent already has is the same score when the body is the same (nothing written) and a
409 naming it when it differs. A concurrent request writing the same id between the probe and the
`COPY` makes the `COPY` fail inside a savepoint; the rows then go in with `ON CONFLICT DO
NOTHING`, and the ids another request wrote are compared like earlier ones.
"""

from __future__ import annotations

from django.db import transaction

from apps.common.errors import BadRequest
from apps.scores.events import ScoresCreated, scores_created
from apps.scores.models import ScoreConfig, Source
from apps.scores.services.parsing import (
    ItemError,
    ScoreBatch,
    ScoreIn,
    check_value,
    label_order,
    raise_collected,
    score_input_parse,
)
from apps.scores.services.storing import ScoresResult, _store
from apps.scores.services.targets import _targets_resolve
from apps.workspaces.audit import current_actor
from apps.workspaces.models import Agent


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
