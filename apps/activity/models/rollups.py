"""The daily analytics rollups the recording keeps (and the Overview reads): counts, tokens and
credits per group and key, and their latency histograms."""

from django.db import models

from apps.activity.models.links import agent_field


class Rollup(models.Model):
    """Daily analytics of steps and runs per group (apps.activity.analytics): how many, how many
    failed, their tokens and credits, per Agent, UTC day, group and key — steps by tool, model
    and step name, runs by environment and release, and the Overview's figures
    (apps.activity.overview_rollup). Written with the recording as differences, so the
    analytics never scan the steps; split in stripes like the usage rollup (a recording adds to
    a stripe no other recording of the Agent in flight holds; readers sum them)."""

    row = models.BigAutoField(primary_key=True)
    agent = agent_field()
    day = models.DateField()
    group = models.CharField(max_length=12)  # analytics.GROUPS
    key = models.CharField(max_length=255)  # "" when the run has no environment / release
    stripe = models.PositiveSmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    # Exact decimal sums of the rows' float credits (apps.common.credits).
    credits = models.DecimalField(max_digits=30, decimal_places=9, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "group", "day", "key", "stripe"], name="rollup_agent_group_day"
            ),
        ]


class RollupLatency(models.Model):
    """How many of a Rollup row's steps (runs) took a latency in one bucket of the histogram of
    apps.common.latency: percentiles over any period, without the steps."""

    row = models.BigAutoField(primary_key=True)
    agent = agent_field()
    day = models.DateField()
    group = models.CharField(max_length=12)
    key = models.CharField(max_length=255)
    bucket = models.PositiveSmallIntegerField()
    stripe = models.PositiveSmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "group", "day", "key", "bucket", "stripe"],
                name="rollup_latency_agent_group_day",
            ),
        ]
