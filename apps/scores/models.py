# ruff: noqa: DJ001 - the API tells null ("none") from "" apart, so some strings are nullable.
"""Judgements on what an Agent did: scores, and the per-Agent configs they are checked against.

A score judges exactly one target: a run, a step of a run, a conversation or a message. It also
stores the run and conversation its target implies (a message's conversation and the run that
produced it, a step's run, a run's conversation), so "scores of this run", "of this
conversation" and the runs list's score filter each read one index, with no join.

Ids are public (`score_...`) and may come from the client: the same id with the same body is
the same score (an idempotent write); they are unique per Agent, as activity's ids are.

End-user feedback is a score like the others: `source` = `end_user`, `name` = `user_feedback`,
boolean (true = thumbs up), on an assistant message, at most one per message and end user.
"""

from django.conf import settings
from django.db import models

from apps.common.ids import id_factory

ID_MAX_LENGTH = 64
NAME_MAX_LENGTH = 100
CATEGORY_MAX_LENGTH = 100
COMMENT_MAX_LENGTH = 2000
FEEDBACK_NAME = "user_feedback"


class DataType(models.TextChoices):
    NUMERIC = "numeric", "Numeric"
    CATEGORICAL = "categorical", "Categorical"
    BOOLEAN = "boolean", "Boolean"


class Source(models.TextChoices):
    API = "api", "API"
    END_USER = "end_user", "End user"
    CONSOLE = "console", "Console"


class TargetType(models.TextChoices):
    RUN = "run", "Run"
    RUN_STEP = "run_step", "Run step"
    CONVERSATION = "conversation", "Conversation"
    MESSAGE = "message", "Message"


class Score(models.Model):
    DataType = DataType
    Source = Source
    TargetType = TargetType

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("score"))
    agent = models.ForeignKey(
        "workspaces.Agent", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    target_type = models.CharField(max_length=12, choices=TargetType.choices)
    # The target's id in its own column, and the run and conversation it implies (null when
    # the target implies none: a conversation has no run, a message of a user no run).
    run_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    step_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    conversation_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    message_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    data_type = models.CharField(max_length=12, choices=DataType.choices)
    # Exactly one holds the value, by data_type (a check constraint below).
    number_value = models.FloatField(null=True, blank=True)
    string_value = models.CharField(max_length=CATEGORY_MAX_LENGTH, null=True, blank=True)
    boolean_value = models.BooleanField(null=True, blank=True)
    comment = models.TextField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices)
    # Who gave it: the API key (source api), the end user (end_user), the member (console).
    api_key_id = models.CharField(max_length=40, null=True, blank=True)
    end_user_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET /v1/scores and the Scores page: newest first.
            models.Index(fields=["agent", "-created_at", "-id"], name="score_agent_created"),
            # ?name= on the list, and the Overview's series per score name.
            models.Index(
                fields=["agent", "name", "-created_at", "-id"], name="score_agent_name_created"
            ),
            # ?run_id=, the run page, and the runs list's score filter and column (an EXISTS
            # probe per run: agent, run, name).
            models.Index(
                fields=["agent", "run_id", "name"],
                condition=models.Q(run_id__isnull=False),
                name="score_agent_run",
            ),
            # ?conversation_id=, the transcript, the conversations list's score filter.
            models.Index(
                fields=["agent", "conversation_id", "name"],
                condition=models.Q(conversation_id__isnull=False),
                name="score_agent_conversation",
            ),
            # ?message_id=.
            models.Index(
                fields=["agent", "message_id"],
                condition=models.Q(message_id__isnull=False),
                name="score_agent_message",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="score_agent_id"),
            # One feedback per message and end user: a new vote updates it.
            models.UniqueConstraint(
                fields=["agent", "message_id", "end_user_id", "name"],
                condition=models.Q(source="end_user"),
                name="score_one_feedback_per_user",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(
                        data_type="numeric",
                        number_value__isnull=False,
                        string_value__isnull=True,
                        boolean_value__isnull=True,
                    )
                    | models.Q(
                        data_type="categorical",
                        number_value__isnull=True,
                        string_value__isnull=False,
                        boolean_value__isnull=True,
                    )
                    | models.Q(
                        data_type="boolean",
                        number_value__isnull=True,
                        string_value__isnull=True,
                        boolean_value__isnull=False,
                    )
                ),
                name="score_one_value_of_its_type",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.value}"

    @property
    def value(self) -> float | str | bool | None:
        if self.data_type == DataType.NUMERIC:
            return self.number_value
        if self.data_type == DataType.CATEGORICAL:
            return self.string_value
        return self.boolean_value

    @property
    def target_id(self) -> str | None:
        return {
            TargetType.RUN: self.run_id,
            TargetType.RUN_STEP: self.step_id,
            TargetType.CONVERSATION: self.conversation_id,
            TargetType.MESSAGE: self.message_id,
        }.get(TargetType(self.target_type))

    @property
    def is_negative_feedback(self) -> bool:
        return (
            self.source == Source.END_USER
            and self.name == FEEDBACK_NAME
            and self.boolean_value is False
        )


class ScoreConfig(models.Model):
    """What a score of this name must be, for one Agent: its type and range or categories.
    A score whose name has an active config is checked against it; other names are free."""

    DataType = DataType

    id = models.CharField(primary_key=True, max_length=40, default=id_factory("scfg"))
    agent = models.ForeignKey(
        "workspaces.Agent", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    data_type = models.CharField(max_length=12, choices=DataType.choices)
    min_value = models.FloatField(null=True, blank=True)
    max_value = models.FloatField(null=True, blank=True)
    categories = models.JSONField(default=list, blank=True)
    description = models.CharField(max_length=500, blank=True, default="")
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            # One config per name (archived ones too: restoring one must not collide); also
            # the index of GET /v1/score_configs (by name) and of validation by name.
            models.UniqueConstraint(fields=["agent", "name"], name="scorecfg_agent_name"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def archived(self) -> bool:
        return self.archived_at is not None
