from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Health, readiness and metrics: what the people who run the service look at.

    It sits at the top, like config/: it may know every app (readiness asks for the embedding
    model, the metrics count documents by status), and no app imports it. Apps record their own
    metrics through apps.common.metrics; what other apps' signals say is counted here.
    """

    name = "apps.operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.operations import signals

        signals.make_metrics_folder()
        signals.connect()
