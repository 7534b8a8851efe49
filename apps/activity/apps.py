from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "apps.activity"
    label = "activity"

    def ready(self) -> None:
        # A knowledge search that names its run is recorded as the run's retrieval step.
        from apps.activity.services import retrieval_step_record_on_search
        from apps.knowledge.events import on_knowledge_searched

        on_knowledge_searched(retrieval_step_record_on_search)
