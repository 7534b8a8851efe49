# ruff: noqa: DJ001 - the contract tells null ("not recorded") from "" apart, so strings are nullable.
"""Conversations and their messages (a transcript, in the AI SDK's UIMessage parts)."""

from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Lower

from apps.activity.models.links import ID_MAX_LENGTH, SameAgentLink, agent_field
from apps.activity.models.runs import RunStatus
from apps.common.ids import id_factory


class Conversation(models.Model):
    class Source(models.TextChoices):
        EMBED = "embed", "Embed"
        PREVIEW = "preview", "Preview"

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("conv"))
    agent = agent_field()
    user_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    user = SameAgentLink("EndUser", through="user_id", related_name="conversations", null=True)
    title = models.CharField(max_length=500, null=True, blank=True)
    status = models.CharField(max_length=12, choices=RunStatus.choices, null=True, blank=True)
    source = models.CharField(max_length=12, choices=Source.choices, null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET /v1/conversations and the Conversations page: most recently updated first.
            models.Index(fields=["agent", "-updated_at", "-id"], name="conv_agent_updated"),
            # The console's conversations sorted by start (either way: one index serves both).
            models.Index(fields=["agent", "-created_at", "-id"], name="conv_agent_created"),
            # ?user_id= on the list, and a user's page: that user's conversations.
            models.Index(fields=["agent", "user_id", "-updated_at", "-id"], name="conv_agent_user"),
            # ?status= on the list.
            models.Index(
                fields=["agent", "status", "-updated_at", "-id"], name="conv_agent_status"
            ),
            # The Conversations page sorted by title, status or source (CONVERSATION_SORTS:
            # the same expressions, or the index is not used).
            models.Index(
                F("agent"), Lower(Coalesce(F("title"), Value(""))), F("id"), name="conv_agent_title"
            ),
            models.Index(
                F("agent"), Coalesce(F("status"), Value("")), F("id"), name="conv_agent_status_sort"
            ),
            models.Index(
                F("agent"), Coalesce(F("source"), Value("")), F("id"), name="conv_agent_source"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="conv_agent_id"),
        ]

    def __str__(self) -> str:
        return self.title or self.id


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("msg"))
    agent = agent_field(constraint=False)
    conversation_id = models.CharField(max_length=ID_MAX_LENGTH)
    conversation = SameAgentLink("Conversation", through="conversation_id", related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    # AI SDK UIMessage parts, stored exactly as the runtime sent them.
    parts = models.JSONField(default=list)
    source_id = models.CharField(max_length=255, null=True, blank=True)
    # The run that produced this message (an assistant answer), of the same conversation.
    run_id = models.CharField(max_length=ID_MAX_LENGTH, null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(null=True, blank=True)
    # Word search (apps.activity.search_index): the words of the text parts as indexed, and
    # their text search configuration. PostgreSQL stores `search_vector` from them (a generated
    # column with a GIN index, migration 0015), which the ORM never reads. The database default
    # lets rows written in SQL (fills, benchmarks) leave the configuration out.
    search_text = models.TextField(null=True, blank=True)
    search_config = models.CharField(max_length=20, default="simple", db_default="simple")

    class Meta:
        indexes = [
            # GET /v1/conversations/{id}/messages and the transcript: oldest first.
            models.Index(
                fields=["agent", "conversation_id", "created_at", "id"], name="msg_conv_created"
            ),
            # The run page: the messages a run produced.
            models.Index(
                fields=["agent", "run_id"],
                condition=models.Q(run_id__isnull=False),
                name="msg_agent_run",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "id"], name="msg_agent_id"),
        ]
