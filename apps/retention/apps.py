from django.apps import AppConfig


class RetentionConfig(AppConfig):
    """How long a workspace keeps its activity, and the beat task that applies it.

    It sits at the top, like apps.operations: it orchestrates the purge services of activity
    and knowledge (each app owns the rules for deleting its own rows), and no app imports it.
    """

    name = "apps.retention"
    default_auto_field = "django.db.models.BigAutoField"
