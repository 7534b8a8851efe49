"""The writes to usage a person or a recording asks for: the workspace's monthly credit limit
and the announcements of its thresholds. The rollup they read is kept in apps.usage.rollup.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from apps.common.errors import BadRequest
from apps.usage.days import month_start, next_month, utc_day
from apps.usage.events import ThresholdAnnounced, announce_threshold_reached
from apps.usage.models import DailyUsage, ThresholdReached
from apps.workspaces.audit import actor_for_user, audit_diff, audit_record
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import is_workspace_owner

THRESHOLDS = (80, 100)
MAX_CREDIT_LIMIT = Decimal("999999999999999999.99")


def month_credits(*, workspace_id: str, month: date) -> Decimal:
    total = DailyUsage.objects.filter(
        workspace_id=workspace_id, day__gte=month, day__lt=next_month(month)
    ).aggregate(total=Sum("credits_charged"))["total"]
    return total or Decimal(0)


def thresholds_check(*, workspace_id: str) -> list[ThresholdReached]:
    """Announce the current month's thresholds that are reached and not yet announced.

    Checked on every credit change of the month (not only when one run crosses the line), so a
    threshold two concurrent recordings crossed together is announced by the next one at the
    latest. Each is announced once: the unique row decides who does it.
    """
    from apps.usage.rendering import threshold_to_dict

    limit = (
        Workspace.objects.filter(pk=workspace_id)
        .values_list("monthly_credit_limit", flat=True)
        .first()
    )
    if limit is None:
        return []
    now = timezone.now()
    month = month_start(utc_day(now))
    used = month_credits(workspace_id=workspace_id, month=month)
    due = [percent for percent in THRESHOLDS if used * 100 >= limit * percent]
    if not due:
        return []
    done = set(
        ThresholdReached.objects.filter(
            workspace_id=workspace_id, month=month, percent__in=due
        ).values_list("percent", flat=True)
    )
    announced = []
    for percent in due:
        if percent in done:
            continue
        try:
            with transaction.atomic():  # a savepoint: losing the race must not undo the run
                reached = ThresholdReached.objects.create(
                    workspace_id=workspace_id,
                    month=month,
                    percent=percent,
                    credit_limit=limit,
                    credits_used=used,
                    reached_at=now,
                )
        except IntegrityError:  # announced concurrently: the first one stands
            continue
        announce_threshold_reached(
            ThresholdAnnounced(workspace_id=workspace_id, data=threshold_to_dict(reached), at=now)
        )
        announced.append(reached)
    return announced


def credit_limit_parse(raw: str | None) -> Decimal | None:
    """A limit typed by a person: empty means none; otherwise a positive number, 2 decimals."""
    text = (raw or "").strip().replace(",", "")
    if not text:
        return None
    try:
        value = Decimal(text)
    except ArithmeticError:
        raise BadRequest("monthly_credit_limit: Enter a number, such as 1000.") from None
    if not value.is_finite() or value <= 0:
        raise BadRequest("monthly_credit_limit: Must be more than 0 (leave empty for no limit).")
    if value > MAX_CREDIT_LIMIT:
        raise BadRequest("monthly_credit_limit: That is more than the largest limit allowed.")
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def credit_limit_set(*, workspace: Workspace, user, limit: Decimal | None) -> Workspace:
    """Set (or clear, with None) the monthly credit limit; owners only.

    Thresholds of the current month that the new limit no longer reaches are re-armed, and
    ones it already reaches are announced now (a limit lowered below this month's usage).
    """
    if not is_workspace_owner(user_id=user.pk, workspace_id=workspace.pk):
        raise PermissionDenied("Only a workspace owner can change the credit limit.")
    if limit is not None and (limit <= 0 or limit > MAX_CREDIT_LIMIT):
        raise BadRequest("monthly_credit_limit: Must be more than 0.")
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        before = locked.monthly_credit_limit
        locked.monthly_credit_limit = limit
        locked.save(update_fields=["monthly_credit_limit"])
        diff = audit_diff({"monthly_credit_limit": before}, {"monthly_credit_limit": limit})
        if diff:
            audit_record(
                workspace_id=workspace.pk,
                action="workspace.credit_limit_changed",
                target_type="workspace",
                target_id=workspace.pk,
                target_name=workspace.name,
                changes=diff,
                actor=actor_for_user(user),
            )
        month = month_start(utc_day(timezone.now()))
        used = month_credits(workspace_id=workspace.pk, month=month)
        fired = ThresholdReached.objects.filter(workspace_id=workspace.pk, month=month)
        for reached in fired:
            if limit is None or used * 100 < limit * reached.percent:
                reached.delete()
        thresholds_check(workspace_id=workspace.pk)
    workspace.monthly_credit_limit = limit
    return workspace
