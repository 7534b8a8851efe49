"""Setting a workspace's retention policy and applying every workspace's, in bounded work."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.activity.retention import Purged, conversations_purge_batch
from apps.common.errors import BadRequest
from apps.knowledge.retention import versions_prune_superseded
from apps.retention.events import activity_purged
from apps.retention.models import RetentionPolicy
from apps.workspaces.audit import SYSTEM_ACTOR, audit_events_purge_batch, audit_record
from apps.workspaces.models import Agent, Workspace

ALLOWED_DAYS = tuple(RetentionPolicy.ActivityDays.values)


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


def retention_apply(*, time_budget_seconds: float = 20.0, batch_size: int = 100) -> RetentionRun:
    """Delete what every workspace's policy has expired, batch by batch, until nothing is left
    or the time budget is spent (`finished` False: the caller runs it again)."""
    deadline = time.monotonic() + time_budget_seconds
    now = timezone.now()
    result = RetentionRun()
    for workspace in Workspace.objects.order_by("pk"):
        days = retention_days(workspace=workspace)
        if days is None:
            continue
        before = now - timedelta(days=days)
        agent_ids = list(Agent.objects.filter(workspace=workspace).values_list("pk", flat=True))
        purged = Purged()
        while True:
            if time.monotonic() > deadline:
                result.finished = False
                break
            batch = conversations_purge_batch(
                agent_ids=agent_ids, before=before, batch_size=batch_size
            )
            if not batch.ids:
                break
            purged.add(batch)
        if purged.conversations or purged.messages or purged.runs:
            result.purged[workspace.pk] = purged
            _audit(
                workspace.pk,
                "retention.activity_purged",
                {
                    "before": before,
                    "conversations": purged.conversations,
                    "messages": purged.messages,
                    "runs": purged.runs,
                },
                actor=SYSTEM_ACTOR,
            )
            activity_purged.send(
                sender=RetentionPolicy,
                workspace_id=workspace.pk,
                before=before,
                counts={
                    "conversations": purged.conversations,
                    "messages": purged.messages,
                    "runs": purged.runs,
                },
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
