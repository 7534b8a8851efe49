from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"

    def ready(self) -> None:
        # Webhooks listens to activity (never the other way): ended runs become outbox rows.
        from apps.activity.events import on_run_recorded
        from apps.webhooks.services import delivery_record_on_run_recorded

        on_run_recorded(delivery_record_on_run_recorded)
