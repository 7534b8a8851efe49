"""OpenAPI descriptions of the usage object (built by apps.usage.rendering)."""

from rest_framework import serializers

from apps.usage.latency import RELATIVE_ERROR

LATENCY_HELP = (
    "Turn latency percentiles (nearest rank) from a log-scale histogram: each value is within "
    f"{RELATIVE_ERROR * 100:.2f} % of the run latency at that rank (0.5 ms under 1 ms). Null "
    "when no run of the range has a latency (streaming runs have none yet)."
)


class UsageTokensOut(serializers.Serializer):
    input = serializers.IntegerField(min_value=0)
    output = serializers.IntegerField(min_value=0)
    total = serializers.IntegerField(min_value=0, help_text="Sum of the runs' `total_tokens`.")
    cache_read = serializers.IntegerField(min_value=0)
    cache_write = serializers.IntegerField(min_value=0)


class UsageLatencyOut(serializers.Serializer):
    p50 = serializers.FloatField(allow_null=True, min_value=0)
    p95 = serializers.FloatField(allow_null=True, min_value=0)


def _figure_fields() -> dict:
    return {
        "runs": serializers.IntegerField(min_value=0),
        "completed_runs": serializers.IntegerField(min_value=0),
        "failed_runs": serializers.IntegerField(min_value=0),
        "aborted_runs": serializers.IntegerField(min_value=0),
        "streaming_runs": serializers.IntegerField(
            min_value=0, help_text="Runs still streaming (not ended yet)."
        ),
        "tokens": UsageTokensOut(help_text="Tokens by kind: sums of the runs' token fields."),
        "credits_charged": serializers.FloatField(min_value=0),
        "latency_ms": UsageLatencyOut(help_text=LATENCY_HELP),
    }


UsageFiguresOut = type("UsageFigures", (serializers.Serializer,), _figure_fields())
UsageAgentOut = type(
    "UsageAgent",
    (serializers.Serializer,),
    {"agent_id": serializers.CharField(), "name": serializers.CharField(), **_figure_fields()},
)
UsageSeriesOut = type(
    "UsageSeriesEntry",
    (serializers.Serializer,),
    {
        "start": serializers.DateField(help_text="First UTC day of the entry."),
        "end": serializers.DateField(help_text="Last UTC day of the entry (included)."),
        **_figure_fields(),
    },
)


class UsagePeriodOut(serializers.Serializer):
    # `from` is a Python keyword: declared below.
    to = serializers.DateField(help_text="Last UTC day, included.")
    granularity = serializers.ChoiceField(choices=["day", "week"])


UsagePeriodOut._declared_fields = {
    "from": serializers.DateField(help_text="First UTC day, included."),
    **UsagePeriodOut._declared_fields,
}


class UsageRateLimitOut(serializers.Serializer):
    requests = serializers.IntegerField(min_value=1)
    window_seconds = serializers.IntegerField(min_value=1)
    per = serializers.ChoiceField(choices=["api_key"])


class UsageLimitsOut(serializers.Serializer):
    month = serializers.CharField(help_text="The current UTC month, YYYY-MM.")
    monthly_credit_limit = serializers.FloatField(
        allow_null=True, help_text="Set by an owner in the console; null = no limit."
    )
    credits_used_this_month = serializers.FloatField(min_value=0)
    percent_used = serializers.FloatField(
        allow_null=True, help_text="Of the limit, 2 decimals; null without a limit."
    )
    state = serializers.ChoiceField(
        choices=["none", "ok", "warning", "exceeded"],
        help_text="`none`: no limit; `warning`: 80 % reached; `exceeded`: 100 % reached.",
    )
    rate_limit = UsageRateLimitOut(help_text="Requests each API key may make per window.")


class UsageOut(serializers.Serializer):
    object = serializers.ChoiceField(choices=["usage"])
    workspace_id = serializers.CharField()
    agent_id = serializers.CharField(
        allow_null=True, help_text="The Agent the figures are limited to; null = whole workspace."
    )
    period = UsagePeriodOut()
    totals = UsageFiguresOut()
    limits = UsageLimitsOut()
    agents = UsageAgentOut(
        many=True,
        help_text="Per Agent over the period, most credits first: every active Agent and any "
        "archived one with runs (only the filtered Agent when filtered).",
    )
    series = UsageSeriesOut(
        many=True, help_text="Every day (or ISO week, cut to the period) of the period, in order."
    )
