"""Reads of usage: a workspace's (or one Agent's) figures over a period, from the rollup only,
one module per subject:

- `scope`: the period a read covers (`from`, `to`, `granularity`, checked here) and its Agent;
- `figures`: the counters summed per Agent and per day or week, the limit, this month's credits;
- `percentiles`: the turn latency p50 and p95 picked in the database from the histograms.

Callers import from `apps.usage.selectors`; the names below are the package's public face.
"""

from apps.usage.selectors.figures import Figures, Usage, usage_get
from apps.usage.selectors.percentiles import percentile_of
from apps.usage.selectors.scope import GRANULARITIES, Period, period_parse, usage_agent_get

__all__ = [
    "GRANULARITIES",
    "Figures",
    "Period",
    "Usage",
    "percentile_of",
    "period_parse",
    "usage_agent_get",
    "usage_get",
]
