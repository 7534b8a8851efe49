from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "apps.api"
    label = "api"

    def ready(self) -> None:
        # Registers the bearer scheme with drf-spectacular.
        from apps.api import openapi  # noqa: F401
