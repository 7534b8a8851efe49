"""A workspace's retention policy: how long its activity is kept."""

from django.db import models


class RetentionPolicy(models.Model):
    class ActivityDays(models.IntegerChoices):
        DAYS_30 = 30, "30 days"
        DAYS_90 = 90, "90 days"
        DAYS_365 = 365, "365 days"

    workspace = models.OneToOneField(
        "workspaces.Workspace", primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    # Null: kept forever. A conversation (with its messages and runs) goes once its last
    # activity is older than this; the usage rollup is never touched.
    activity_days = models.PositiveIntegerField(choices=ActivityDays.choices, null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "retention_policy"
