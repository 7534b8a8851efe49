"""Usage to the API's objects: plain functions, exact field sets (docs/usage.md)."""

from decimal import Decimal

from django.conf import settings

from apps.api.rates import rate_parse
from apps.usage.models import ThresholdReached
from apps.usage.selectors import Figures, Usage
from apps.usage.services import THRESHOLDS


def figures_to_dict(figures: Figures) -> dict:
    counters = figures.counters
    p50, p95 = figures.latency()
    return {
        "runs": counters["runs"],
        "completed_runs": counters["completed_runs"],
        "failed_runs": counters["failed_runs"],
        "aborted_runs": counters["aborted_runs"],
        "streaming_runs": counters["streaming_runs"],
        "tokens": {
            "input": counters["input_tokens"],
            "output": counters["output_tokens"],
            "total": counters["total_tokens"],
            "cache_read": counters["cache_read_tokens"],
            "cache_write": counters["cache_write_tokens"],
        },
        "credits_charged": float(figures.credits),
        "latency_ms": {"p50": p50, "p95": p95},
    }


def percent_used(used: Decimal, limit: Decimal | None) -> float | None:
    if limit is None:
        return None
    return round(float(used * 100 / limit), 2)


def limit_state(used: Decimal, limit: Decimal | None) -> str:
    """`none` (no limit), `ok`, `warning` (80 % reached) or `exceeded` (100 % reached)."""
    if limit is None:
        return "none"
    if used * 100 >= limit * THRESHOLDS[1]:
        return "exceeded"
    if used * 100 >= limit * THRESHOLDS[0]:
        return "warning"
    return "ok"


def rate_limit_to_dict() -> dict:
    rate = rate_parse(settings.API_RATE_LIMIT)
    return {"requests": rate.amount, "window_seconds": rate.window_seconds, "per": "api_key"}


def usage_to_dict(usage: Usage) -> dict:
    return {
        "object": "usage",
        "workspace_id": usage.workspace.pk,
        "agent_id": usage.agent.pk if usage.agent is not None else None,
        "period": {
            "from": usage.period.start.isoformat(),
            "to": usage.period.end.isoformat(),
            "granularity": usage.period.granularity,
        },
        "totals": figures_to_dict(usage.totals),
        "limits": {
            "month": usage.month.strftime("%Y-%m"),
            "monthly_credit_limit": None
            if usage.credit_limit is None
            else float(usage.credit_limit),
            "credits_used_this_month": float(usage.month_credits),
            "percent_used": percent_used(usage.month_credits, usage.credit_limit),
            "state": limit_state(usage.month_credits, usage.credit_limit),
            "rate_limit": rate_limit_to_dict(),
        },
        "agents": [
            {"agent_id": agent.pk, "name": agent.name, **figures_to_dict(figures)}
            for agent, figures in usage.agents
        ],
        "series": [
            {"start": first.isoformat(), "end": last.isoformat(), **figures_to_dict(figures)}
            for first, last, figures in usage.series
        ],
    }


def threshold_to_dict(reached: ThresholdReached) -> dict:
    """The `data` of a `usage.threshold_reached` webhook event."""
    return {
        "object": "usage_threshold",
        "workspace_id": reached.workspace_id,
        "month": reached.month.strftime("%Y-%m"),
        "threshold_percent": reached.percent,
        "monthly_credit_limit": float(reached.credit_limit),
        "credits_used": float(reached.credits_used),
        "percent_used": percent_used(Decimal(reached.credits_used), Decimal(reached.credit_limit)),
    }
