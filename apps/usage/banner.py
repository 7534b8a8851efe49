"""The credit-limit warning every console page of a workspace shows (templates/_credit_banner.html),
near (80 %) or over (100 %) the monthly limit.

Cheap on every page: a workspace without a limit costs nothing (the limit comes with the
request's workspace, already loaded); one with a limit costs one cache read. On a miss, one
query sums the month's rollup rows (index usage_daily_workspace_day, a few rows per Agent and
day) and the result is kept for CACHE_SECONDS. The cached figure is dropped when a threshold
is announced (UsageConfig.ready), so the warning appears on the next page after the run that
crossed 80 or 100 %; only the credits are cached, the limit is the request's own, so a changed
limit applies at once. The Usage page shows the same banner with figures read fresh.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.core.cache import cache
from django.db import DatabaseError, transaction
from django.utils import timezone

from apps.usage.days import month_start, utc_day
from apps.usage.events import ThresholdAnnounced
from apps.usage.rendering import limit_state, percent_used
from apps.usage.services import month_credits
from apps.workspaces.models import Workspace

logger = logging.getLogger(__name__)

CACHE_SECONDS = 60


@dataclass(frozen=True)
class CreditBanner:
    state: str  # "warning" (80 % used) or "exceeded" (100 %)
    used: Decimal
    limit: Decimal
    percent: float | None
    month: date


def _key(workspace_id: str, month: date) -> str:
    return f"usage:month-credits:{workspace_id}:{month:%Y-%m}"


def banner_of(used: Decimal, limit: Decimal | None, month: date) -> CreditBanner | None:
    """The banner for `used` credits of `month` against `limit`: None below 80 %."""
    state = limit_state(used, limit)
    if limit is None or state not in ("warning", "exceeded"):
        return None
    return CreditBanner(state, used, limit, percent_used(used, limit), month)


def credit_banner(*, workspace: Workspace) -> CreditBanner | None:
    limit = workspace.monthly_credit_limit
    if limit is None:
        return None
    month = month_start(utc_day(timezone.now()))
    key = _key(workspace.pk, month)
    try:
        used = cache.get(key)
    except Exception:  # a cache outage must not take the console's pages down
        logger.warning("credit banner: cache read failed", exc_info=True)
        used = None
    if used is None:
        try:
            used = month_credits(workspace_id=workspace.pk, month=month)
        except DatabaseError:  # the page (perhaps the error page of that outage) still renders
            logger.warning("credit banner: the month's credits could not be read", exc_info=True)
            return None
        try:
            cache.set(key, used, CACHE_SECONDS)
        except Exception:
            logger.warning("credit banner: cache write failed", exc_info=True)
    return banner_of(Decimal(used), limit, month)


def banner_forget(event: ThresholdAnnounced) -> None:
    """A threshold was crossed: drop the cached month figure once the run commits, so the
    next page shows the warning (listener registered in UsageConfig.ready)."""
    month = date.fromisoformat(f"{event.data['month']}-01")
    key = _key(event.workspace_id, month)

    def forget() -> None:
        try:
            cache.delete(key)
        except Exception:
            logger.warning("credit banner: cache delete failed", exc_info=True)

    transaction.on_commit(forget)
