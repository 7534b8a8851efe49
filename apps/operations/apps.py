from django.apps import AppConfig
from django.conf import settings


class OperationsConfig(AppConfig):
    """Health, readiness and metrics: what the people who run the service look at.

    It sits at the top, like config/: it may know every app (readiness asks for the embedding
    model, the metrics count documents by status), and no app imports it. Apps record their own
    metrics through apps.common.metrics; what other apps' signals say is counted here.
    """

    name = "apps.operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # prometheus-client opens its files here on the first sample of each process.
        settings.PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)
        from apps.operations import signals

        signals.connect()
