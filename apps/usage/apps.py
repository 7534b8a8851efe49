from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "apps.usage"
    label = "usage"

    def ready(self) -> None:
        # Usage listens to activity (never the other way): every recorded run moves the rollup.
        from apps.activity.events import on_runs_recorded
        from apps.usage.rollup import rollup_on_runs_recorded

        on_runs_recorded(rollup_on_runs_recorded)

        # The console's credit-limit banner caches the month's credits: a threshold crossed
        # drops that figure, so the warning shows on the next page.
        from apps.usage.banner import banner_forget
        from apps.usage.events import on_threshold_reached

        on_threshold_reached(banner_forget)
