from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"

    def ready(self) -> None:
        # Webhooks listens to activity and usage (never the other way): ended runs and reached
        # thresholds become outbox rows.
        from apps.activity.events import on_runs_recorded
        from apps.usage.events import on_threshold_reached
        from apps.webhooks.services import (
            delivery_record_on_runs_recorded,
            delivery_record_on_threshold_reached,
        )

        on_runs_recorded(delivery_record_on_runs_recorded)
        on_threshold_reached(delivery_record_on_threshold_reached)

        # And to scores: every new score is a `score.created` delivery when subscribed.
        from apps.scores.events import on_scores_created
        from apps.webhooks.services.outbox import delivery_record_on_scores_created

        on_scores_created(delivery_record_on_scores_created)

        # An end user's data deleted on request: the deliveries carrying copies of their runs.
        from apps.activity.events import on_end_user_data_deleted
        from apps.webhooks.retention import deliveries_delete_on_end_user_data_deleted

        on_end_user_data_deleted(deliveries_delete_on_end_user_data_deleted)
