"""OpenAPI shapes of word search's own objects (extension): a matched message, a matched step.

Kept apart from the contract's objects: a Conversation or Run carries exactly its contract
fields, so what matched, where, and how well is told by these, at their own paths."""

from rest_framework import serializers

SNIPPET_HELP = (
    "Up to 240 characters of the matched text around its best window of matches, HTML-escaped, "
    "each matched word inside <mark>...</mark> (safe to insert as HTML)."
)
RANK_HELP = (
    "Relevance (ts_rank_cd normalised by length on PostgreSQL, bm25 on SQLite): higher is "
    "better; comparable within one query only."
)


class MessageMatchOut(serializers.Serializer):
    """A message whose words match the query (extension)."""

    object = serializers.ChoiceField(choices=["message_match"])
    conversation_id = serializers.CharField()
    message_id = serializers.CharField()
    role = serializers.ChoiceField(choices=["assistant", "system", "user"])
    snippet = serializers.CharField(help_text=SNIPPET_HELP)
    rank = serializers.FloatField(help_text=RANK_HELP)
    created_at = serializers.DateTimeField()


class StepMatchOut(serializers.Serializer):
    """A run step whose input, output, error or query match the query (extension)."""

    object = serializers.ChoiceField(choices=["step_match"])
    run_id = serializers.CharField()
    step_id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["agent", "model", "tool", "retrieval", "custom"])
    snippet = serializers.CharField(help_text=SNIPPET_HELP)
    rank = serializers.FloatField(help_text=RANK_HELP)
    started_at = serializers.DateTimeField()
