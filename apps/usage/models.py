"""The daily usage rollup, its latency histogram and the credit thresholds already announced.

`GET /v1/usage` and the Usage page read these tables, never the runs: one row per Agent and UTC
day (the day of a run's `created_at`) holds the sums over that day's runs, and one row per
Agent, day and latency bucket holds how many of those runs took that long. The recording
service keeps both equal to the sums over the runs by applying each recorded change as a
difference (`apps.usage.rollup`); `manage.py usage_rebuild` recomputes them from the runs.

Each of those rows is split in up to ROLLUP_STRIPES stripes: a recording adds its differences
to a stripe of the Agent that no other recording in flight holds (apps.usage.rollup,
`rollup_stripe`), so concurrent recordings of one busy Agent do not queue on one row lock until
each other's commit. A stripe alone means nothing (a run counted in
one stripe may be taken away in another when it changes); every reader sums the stripes of an
Agent and day (and bucket), and the rebuild writes stripe 0 only.
"""

from django.db import models

# Stripes per Agent and day: the recordings of one Agent that can be in flight at once without
# waiting for each other (gunicorn's workers x threads record at once: 2 x 4 as the README runs
# it).
ROLLUP_STRIPES = 8


class DailyUsage(models.Model):
    agent = models.ForeignKey("workspaces.Agent", on_delete=models.CASCADE, related_name="+")
    # Denormalised from the Agent (which never changes workspace) so a workspace's usage is one
    # index range, without a join.
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    stripe = models.PositiveSmallIntegerField(db_default=0)  # module docstring
    runs = models.BigIntegerField(default=0)
    completed_runs = models.BigIntegerField(default=0)
    failed_runs = models.BigIntegerField(default=0)
    aborted_runs = models.BigIntegerField(default=0)
    streaming_runs = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    # Exact decimal sums: float deltas added and subtracted would drift from the runs' total.
    credits_charged = models.DecimalField(max_digits=30, decimal_places=9, default=0)

    class Meta:
        constraints = [
            # The upsert's conflict target: one row per Agent, day and stripe.
            models.UniqueConstraint(
                fields=["agent", "day", "stripe"], name="usage_daily_agent_day_stripe"
            ),
        ]
        indexes = [
            # GET /v1/usage and the Usage page: a workspace's rows in a date range, and the
            # month's credits that thresholds compare with the limit.
            models.Index(fields=["workspace", "day"], name="usage_daily_workspace_day"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.day}"


class DailyLatency(models.Model):
    """How many of an Agent's runs of one day had a turn latency in one histogram bucket."""

    agent = models.ForeignKey("workspaces.Agent", on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    bucket = models.PositiveSmallIntegerField()  # apps.usage.latency.bucket_of
    stripe = models.PositiveSmallIntegerField(db_default=0)  # module docstring
    runs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # The upsert's conflict target.
            models.UniqueConstraint(
                fields=["agent", "day", "bucket", "stripe"],
                name="usage_latency_agent_day_bucket_stripe",
            ),
        ]
        indexes = [
            # GET /v1/usage: a workspace's histogram rows in a date range, read from the index
            # alone (an index-only scan: every column the query needs is in it).
            models.Index(
                fields=["workspace", "day", "agent", "bucket", "runs"],
                name="usage_latency_workspace_day",
            ),
        ]


class ThresholdReached(models.Model):
    """A credit threshold (80 or 100 % of the limit) announced for a workspace and month.

    The unique constraint makes the announcement happen once, whoever records concurrently.
    """

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    month = models.DateField()  # the first day of the UTC month
    percent = models.PositiveSmallIntegerField()
    credit_limit = models.DecimalField(max_digits=20, decimal_places=2)
    credits_used = models.DecimalField(max_digits=30, decimal_places=9)
    reached_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "month", "percent"], name="usage_threshold_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workspace_id} {self.month:%Y-%m} {self.percent}%"


# --- The coarser tier for long periods (apps.usage.tiers) ---------------------------------------
# A year of one workspace is Agents x 366 days x ~50 occupied buckets of DailyLatency rows. For
# closed months, the seal task (usage.seal_months, beat) derives two smaller sets from them:
# each Agent's histogram over the whole month (totals and per-Agent figures of the months a
# period covers whole) and the workspace's histogram per day summed over its Agents (the
# series). The ingest path never writes these; a read uses them only for months whose seal is
# current (LatencyMonth.built_version == version), and the daily rows otherwise, so an answer
# is the same whichever it reads.


class MonthlyLatency(models.Model):
    """How many of an Agent's runs of one closed UTC month had a turn latency in one bucket."""

    agent = models.ForeignKey("workspaces.Agent", on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    month = models.DateField()  # the first day of the UTC month
    bucket = models.PositiveSmallIntegerField()
    runs = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "month", "bucket"], name="usage_monthlat_agent_month_bucket"
            ),
        ]
        indexes = [
            # GET /v1/usage: a workspace's months in a period, read from the index alone.
            models.Index(
                fields=["workspace", "month", "agent", "bucket", "runs"],
                name="usage_monthlat_workspace",
            ),
        ]


class WorkspaceDailyLatency(models.Model):
    """How many of a workspace's runs (all its Agents) of one day of a closed month had a turn
    latency in one bucket: the series of GET /v1/usage without one row per Agent."""

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    bucket = models.PositiveSmallIntegerField()
    runs = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "day", "bucket"], name="usage_wsdaylat_day_bucket"
            ),
        ]
        indexes = [
            # GET /v1/usage: a workspace's days in a period, read from the index alone.
            models.Index(fields=["workspace", "day", "bucket", "runs"], name="usage_wsdaylat_read"),
        ]


class LatencyMonth(models.Model):
    """A workspace's UTC month whose tier rows are built, and whether they still hold.

    `version` counts the changes to the month's DailyLatency rows made two or more days after
    the day they count (a PostgreSQL trigger on usage_dailylatency adds one: late recordings,
    a rebuild, a deleted Agent); the seal task copies the version it built from into
    `built_version`. The tier is read only while the two are equal. `workspace_id` is a plain
    column, not a foreign key: the trigger writes it while a workspace's rows are being deleted.
    """

    workspace_id = models.CharField(max_length=64)
    month = models.DateField()
    version = models.BigIntegerField(default=0)
    built_version = models.BigIntegerField(null=True)
    built_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace_id", "month"], name="usage_latmonth_once"),
        ]


class WorkspaceDayPercentiles(models.Model):
    """The p50 and p95 latency buckets of a workspace's runs of one day of a closed month (all
    its Agents), picked at sealing by the rule of apps.usage.latency: a year's series by day
    reads 366 rows instead of 366 histograms."""

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    p50_bucket = models.PositiveSmallIntegerField()
    p95_bucket = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            # GET /v1/usage by day: a workspace's days in a period.
            models.UniqueConstraint(fields=["workspace", "day"], name="usage_wsdaypct_day"),
        ]
