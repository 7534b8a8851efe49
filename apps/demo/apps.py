from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The top floor: composes every app's demo data into `manage.py seed_demo`. It may import
    any app; no app imports it (docs/architecture.md)."""

    name = "apps.demo"
    label = "demo"
