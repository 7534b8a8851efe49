from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class ApiConfig(AppConfig):
    name = "apps.api"
    label = "api"

    def ready(self) -> None:
        # Registers the bearer scheme with drf-spectacular.
        from apps.api import openapi  # noqa: F401
        from apps.api.rates import rate_parse

        # A mistyped rate stops the process at start, naming itself, not the first request.
        for name in ("API_RATE_LIMIT", "OAUTH_REGISTRATION_RATE_LIMIT", "OAUTH_TOKEN_RATE_LIMIT"):
            try:
                rate_parse(getattr(settings, name))
            except ImproperlyConfigured as refused:
                raise ImproperlyConfigured(f"{name}: {refused}") from None
