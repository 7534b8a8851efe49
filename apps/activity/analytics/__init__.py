"""Which tool or model is slow: daily rollups of steps and runs, written with the recording.

`GET /v1/analytics/steps` and the console's Performance page read `Rollup` and
`RollupLatency` (apps.activity.models), never the steps: per Agent, UTC day, group and key,
how many steps (runs), how many failed, their tokens, and a latency histogram
(apps.common.latency) from which p50 / p95 / p99 are read over any period.

Groups: a step counts under its `name`, its `tool` (tool_name, tool steps) and its `model`
(model_id, model steps) on the day it started; a run under its `environment` and its `release`
("" when it has none) on the day it was created, and under the Overview's groups
(apps.activity.overview_rollup). A step's latency is its `duration_ms`, a run's its
`total_turn_latency_ms`; one without is counted but has no latency.

Exact: every write of a step or run adds its contribution as it is now and takes away its
contribution as it was (`sign=-1`), in the recording's transaction, and the retention purge
takes away the contributions of the runs and steps it deletes (`rows_deleted`), so the rollup
always equals the sums over the rows (`rollup_rebuild` recomputes it; tests hold the two
equal). Rows are split in `ROLLUP_STRIPES` stripes, claimed like the usage rollup's (the same
advisory locks: a recording holds one stripe of its Agent for both).

The modules: `contributions` (what a step or run adds, summed in a `Delta`), `rollup` (writing
it), `reading` (a period's figures, and the query a request may make).
"""

from apps.activity.analytics.contributions import (
    GROUPS,
    RUN_FIELDS,
    RUN_GROUPS,
    STEP_FIELDS,
    STEP_GROUPS,
    TOKENS,
    Delta,
    run_values,
    step_values,
)
from apps.activity.analytics.reading import (
    AnalyticsQuery,
    GroupFigures,
    figures_to_dict,
    query_parse,
    rollup_read,
)
from apps.activity.analytics.rollup import (
    rollup_apply,
    rollup_rebuild,
    rows_deleted,
    steps_recorded,
    steps_stored_values,
)

__all__ = [
    "GROUPS",
    "RUN_FIELDS",
    "RUN_GROUPS",
    "STEP_FIELDS",
    "STEP_GROUPS",
    "TOKENS",
    "AnalyticsQuery",
    "Delta",
    "GroupFigures",
    "figures_to_dict",
    "query_parse",
    "rollup_apply",
    "rollup_read",
    "rollup_rebuild",
    "rows_deleted",
    "run_values",
    "step_values",
    "steps_recorded",
    "steps_stored_values",
]
