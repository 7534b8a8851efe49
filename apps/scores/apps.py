from django.apps import AppConfig


class ScoresConfig(AppConfig):
    name = "apps.scores"
    label = "scores"

    def ready(self) -> None:
        # POST /v1/ingest takes `score` records: activity asks whoever registered the kind
        # (it imports nothing of scores), and the scores are written in the ingest's
        # transaction, after the runs and messages of the same batch.
        from apps.activity.events import ingest_kind_register
        from apps.scores.serializers import ScoreRecordIn
        from apps.scores.services import scores_ingest, scores_ingest_parse

        ingest_kind_register(
            "score", parse=scores_ingest_parse, record=scores_ingest, schema=ScoreRecordIn
        )

        # An end user's data deleted on request takes their feedback and the scores of their
        # conversations and runs with it.
        from apps.activity.events import on_end_user_data_deleted
        from apps.scores.retention import scores_delete_on_end_user_data_deleted

        on_end_user_data_deleted(scores_delete_on_end_user_data_deleted)
