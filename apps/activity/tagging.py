"""Tagging runs from the console: add a tag to the ticked runs, or take one off.

A tag is checked by the same rule as a recorded run's (apps.activity.dimensions: 1 to
TAG_MAX characters, at most TAGS_MAX a run). Each run is read and written under its row lock,
so recording into the run meanwhile waits and neither loses the other's change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from apps.activity.dimensions import TAGS_MAX, tags_check
from apps.activity.models import Run
from apps.common.errors import BadRequest
from apps.workspaces.models import Agent


@dataclass
class Tagged:
    changed: int = 0
    unchanged: int = 0  # had the tag already (adding), or did not have it (removing)
    full: int = 0  # already TAGS_MAX tags: left as it was
    missing: list[str] = field(default_factory=list)


def tag_parse(raw: str) -> str:
    """The tag typed in the bulk bar; BadRequest saying what is wrong."""
    try:
        [tag] = tags_check([raw.strip()])
    except ValueError as exc:
        raise BadRequest(f"Tag: {exc}") from exc
    return tag


def runs_tag(*, agent: Agent, run_ids: list[str], tag: str, remove: bool = False) -> Tagged:
    """Add `tag` to each of the Agent's runs `run_ids` (or remove it), in one transaction."""
    tag = tag_parse(tag)
    outcome = Tagged()
    with transaction.atomic():
        runs = {
            run.id: run
            for run in Run.objects.select_for_update()
            .filter(agent=agent, id__in=run_ids)
            .only("row", "id", "tags")
        }
        for run_id in run_ids:
            run = runs.get(run_id)
            if run is None:
                outcome.missing.append(run_id)
                continue
            tags = list(run.tags or [])
            if remove == (tag not in tags):
                outcome.unchanged += 1
                continue
            if not remove and len(tags) >= TAGS_MAX:
                outcome.full += 1
                continue
            run.tags = [t for t in tags if t != tag] if remove else [*tags, tag]
            run.save(update_fields=["tags"])
            outcome.changed += 1
    return outcome
