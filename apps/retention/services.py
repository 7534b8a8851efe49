"""Setting a workspace's retention policy and applying every workspace's, in bounded work."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.activity.retention import Purged, conversations_purge_batch
from apps.common.errors import BadRequest
from apps.knowledge.gaps.retention import gaps_purge_batch
from apps.knowledge.retention import versions_prune_superseded
from apps.retention.events import activity_purged
from apps.retention.models import RetentionPolicy
from apps.scores.retention import scores_purge_batch
from apps.webhooks.retention import deliveries_purge_batch
from apps.workspaces.audit import SYSTEM_ACTOR, audit_events_purge_batch, audit_record
from apps.workspaces.models import Agent, Workspace

ALLOWED_DAYS = tuple(RetentionPolicy.ActivityDays.values)
# About 15,000 rows a transaction at ten runs and twenty messages a conversation, well under a
# second's work (docs/performance.md, "Retention purge").
CONVERSATIONS_PER_BATCH = 500


def retention_policy_set(*, workspace: Workspace, activity_days: int | None) -> RetentionPolicy:
    """Keep the workspace's activity `activity_days` (30, 90 or 365) or forever (None)."""
    if activity_days is not None and activity_days not in ALLOWED_DAYS:
        raise BadRequest(
            "activity_days: must be one of "
            + ", ".join(str(days) for days in ALLOWED_DAYS)
            + ", or null to keep activity forever."
        )
    with transaction.atomic():
        before = retention_days(workspace=workspace)
        policy, _created = RetentionPolicy.objects.update_or_create(
            workspace=workspace, defaults={"activity_days": activity_days}
        )
        if before != activity_days:
            _audit(
                workspace.pk,
                "retention.policy_changed",
                {"activity_days": {"from": before, "to": activity_days}},
            )
    return policy


def _audit(workspace_id: str, action: str, changes: dict, **kwargs) -> None:
    audit_record(
        workspace_id=workspace_id,
        action=action,
        target_type="retention_policy",
        target_id=workspace_id,
        changes=changes,
        **kwargs,
    )


def retention_days(*, workspace: Workspace) -> int | None:
    """The workspace's period in days, or None for forever (RETENTION_DEFAULT_ACTIVITY_DAYS
    when it has no policy of its own; 0 there means forever)."""
    policy = RetentionPolicy.objects.filter(workspace=workspace).first()
    if policy is not None:
        return policy.activity_days
    return settings.RETENTION_DEFAULT_ACTIVITY_DAYS or None


@dataclass
class RetentionRun:
    purged: dict[str, Purged] = field(default_factory=dict)
    # Webhook deliveries deleted with their runs, by workspace.
    webhook_deliveries: dict[str, int] = field(default_factory=dict)
    knowledge_versions: int = 0
    # Audit entries past AUDIT_RETENTION_DAYS deleted, by workspace.
    audit_events: dict[str, int] = field(default_factory=dict)
    finished: bool = True


def _audit_events_purge(*, now, deadline: float, batch_size: int, result: RetentionRun) -> bool:
    """Delete the audit entries older than AUDIT_RETENTION_DAYS (0: kept forever), then say
    in each workspace's log how many went. False when the time budget ran out first."""
    days = settings.AUDIT_RETENTION_DAYS
    if not days:
        return True
    before = now - timedelta(days=days)
    finished = True
    while True:
        if time.monotonic() > deadline:
            finished = False
            break
        counts = audit_events_purge_batch(before=before, batch_size=batch_size * 10)
        if not counts:
            break
        for workspace_id, count in counts.items():
            result.audit_events[workspace_id] = result.audit_events.get(workspace_id, 0) + count
    for workspace_id, count in result.audit_events.items():
        _audit(
            workspace_id,
            "retention.audit_events_purged",
            {"before": before, "audit_events": count},
            actor=SYSTEM_ACTOR,
        )
    return finished


def _drain(purge_batch: Callable, deadline: float) -> tuple[list, bool]:
    """Call `purge_batch(resume_at=...)`, each batch starting where the last one stopped, until
    one deletes nothing (True) or `time.monotonic()` passes `deadline` (False); the batches."""
    batches: list = []
    resume_at = None
    while time.monotonic() <= deadline:
        batch = purge_batch(resume_at=resume_at)
        if not batch:
            return batches, True
        batches.append(batch)
        resume_at = batch.resume_at
    return batches, False


def _agent_purge(
    agent_id: str,
    before: datetime,
    deadline: float,
    *,
    conversations_per_batch: int,
    purged: Purged,
    totals: dict[str, int],
) -> bool:
    """One Agent's expired activity, in order: conversations with their messages and runs, then
    the webhook deliveries of runs that are gone, the scores of conversations that are gone,
    and the unanswered questions asked before the cut-off. False when the time ran out."""
    batches, done = _drain(
        partial(
            conversations_purge_batch,
            agent_id=agent_id,
            before=before,
            batch_size=conversations_per_batch,
        ),
        deadline,
    )
    for batch in batches:
        purged.add(batch)
    follow = (
        ("webhook_deliveries", deliveries_purge_batch, "deliveries"),
        ("scores", scores_purge_batch, "scores"),
        ("unanswered_questions", gaps_purge_batch, "askings"),
    )
    for total, purge_batch, counted in follow:
        if not done:
            return False
        batches, done = _drain(partial(purge_batch, agent_id=agent_id, before=before), deadline)
        totals[total] += sum(getattr(batch, counted) for batch in batches)
    return done


def retention_apply(
    *,
    time_budget_seconds: float = 20.0,
    batch_size: int = 100,
    conversations_per_batch: int = CONVERSATIONS_PER_BATCH,
) -> RetentionRun:
    """Delete what every workspace's policy has expired, batch by batch, until nothing is left
    or the time budget is spent (`finished` False: the caller runs it again). Activity goes
    `conversations_per_batch` conversations a transaction; audit entries and knowledge
    versions `batch_size` (x10 for audit entries) at a time."""
    deadline = time.monotonic() + time_budget_seconds
    now = timezone.now()
    result = RetentionRun()
    for workspace in Workspace.objects.order_by("pk"):
        days = retention_days(workspace=workspace)
        if days is None:
            continue
        before = now - timedelta(days=days)
        purged = Purged()
        totals = {"webhook_deliveries": 0, "scores": 0, "unanswered_questions": 0}
        agent_ids = Agent.objects.filter(workspace=workspace).order_by("pk")
        for agent_id in agent_ids.values_list("pk", flat=True):
            if not _agent_purge(
                agent_id,
                before,
                deadline,
                conversations_per_batch=conversations_per_batch,
                purged=purged,
                totals=totals,
            ):
                result.finished = False
                break
        if purged.conversations or any(totals.values()):
            result.purged[workspace.pk] = purged
            result.webhook_deliveries[workspace.pk] = totals["webhook_deliveries"]
            counts = {**purged.counts(), **totals}
            _audit(
                workspace.pk,
                "retention.activity_purged",
                {"before": before, **counts},
                actor=SYSTEM_ACTOR,
            )
            activity_purged.send(
                sender=RetentionPolicy, workspace_id=workspace.pk, before=before, counts=counts
            )
        if not result.finished:
            return result
    if not _audit_events_purge(now=now, deadline=deadline, batch_size=batch_size, result=result):
        result.finished = False
        return result
    while time.monotonic() <= deadline:
        pruned = versions_prune_superseded(batch_size=batch_size)
        result.knowledge_versions += pruned
        if not pruned:
            return result
    result.finished = False
    return result
