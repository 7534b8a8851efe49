"""Rows to the contract's objects (sections 2.2 to 2.5): exact field sets, in order.

These are the API's output path and the `data` of webhook run events, so they build dicts
straight from the row: no serializer, no extra query (foreign keys are read as `*_id`). Each
object is a `Shape`, which also writes list pages from rows PostgreSQL has formatted.
"""

from apps.activity.models import Conversation, EndUser, Message, Run, RunStep
from apps.common.shapes import Shape

# The contract's objects, sections 2.2 to 2.5.
USER = Shape(
    "user",
    ("id", "external_id", "identity_type", "display_name", "email", "avatar_url",
     "first_seen_at", "last_seen_at"),
    times=frozenset({"first_seen_at", "last_seen_at"}),
)  # fmt: skip
CONVERSATION = Shape(
    "conversation",
    ("id", "title", "status", "source", "user_id", "created_at", "updated_at"),
    times=frozenset({"created_at", "updated_at"}),
)
MESSAGE = Shape(
    "message",
    ("id", "role", "parts", "source_id", "created_at", "updated_at"),
    times=frozenset({"created_at", "updated_at"}),
    json=frozenset({"parts"}),
)
RUN = Shape(
    "run",
    ("id", "conversation_id", "user_id", "request_id", "status", "model_id", "effort",
     "sdk_version", "protocol_version", "input_tokens", "output_tokens", "total_tokens",
     "cache_read_tokens", "cache_write_tokens", "credits_charged", "tool_names",
     "failed_tool_names", "component_kinds", "error_code", "first_chunk_at", "completed_at",
     "total_turn_latency_ms", "created_at", "updated_at"),
    times=frozenset({"first_chunk_at", "completed_at", "created_at", "updated_at"}),
    json=frozenset({"tool_names", "failed_tool_names", "component_kinds"}),
)  # fmt: skip


def user_to_dict(user: EndUser) -> dict:
    return USER.from_model(user)


def conversation_to_dict(conversation: Conversation) -> dict:
    return CONVERSATION.from_model(conversation)


def message_to_dict(message: Message) -> dict:
    return MESSAGE.from_model(message)


def run_to_dict(run: Run) -> dict:
    return RUN.from_model(run)


def run_attributes_to_dict(run: Run) -> dict:
    """A run's dimensions (extension, apps.activity.dimensions): their own object, so the
    contract's run keeps exactly its fields."""
    return {
        "object": "run_attributes",
        "run_id": run.id,
        "environment": run.environment,
        "release": run.release,
        "tags": list(run.tags),
        "metadata": dict(run.metadata),
    }


STEP = Shape(
    "run_step",
    ("id", "run_id", "parent_id", "trace_id", "kind", "name", "status", "error", "started_at",
     "ended_at", "duration_ms", "input", "output", "model_id", "input_tokens", "output_tokens",
     "total_tokens", "cache_read_tokens", "cache_write_tokens", "credits_charged",
     "first_token_ms", "finish_reason", "tool_name", "mcp_server", "query", "documents",
     "attributes", "truncated", "created_at", "updated_at"),
    times=frozenset({"started_at", "ended_at", "created_at", "updated_at"}),
    json=frozenset({"input", "output", "documents", "attributes", "truncated"}),
)  # fmt: skip


def step_to_dict(step: RunStep) -> dict:
    return STEP.from_model(step)
