"""Rows to the contract's objects (sections 2.2 to 2.5): plain functions, exact field sets.

These are the API's output path and the `data` of webhook run events, so they build dicts
straight from the row: no serializer, no extra query (foreign keys are read as `*_id`).
"""

from apps.activity.models import Conversation, EndUser, Message, Run
from apps.common.time import iso


def user_to_dict(user: EndUser) -> dict:
    return {
        "object": "user",
        "id": user.id,
        "external_id": user.external_id,
        "identity_type": user.identity_type,
        "display_name": user.display_name,
        "email": user.email,
        "avatar_url": user.avatar_url,
        "first_seen_at": iso(user.first_seen_at),
        "last_seen_at": iso(user.last_seen_at),
    }


def conversation_to_dict(conversation: Conversation) -> dict:
    return {
        "object": "conversation",
        "id": conversation.id,
        "title": conversation.title,
        "status": conversation.status,
        "source": conversation.source,
        "user_id": conversation.user_id,
        "created_at": iso(conversation.created_at),
        "updated_at": iso(conversation.updated_at),
    }


def message_to_dict(message: Message) -> dict:
    return {
        "object": "message",
        "id": message.id,
        "role": message.role,
        "parts": message.parts,
        "source_id": message.source_id,
        "created_at": iso(message.created_at),
        "updated_at": iso(message.updated_at),
    }


def run_to_dict(run: Run) -> dict:
    return {
        "object": "run",
        "id": run.id,
        "conversation_id": run.conversation_id,
        "user_id": run.user_id,
        "request_id": run.request_id,
        "status": run.status,
        "model_id": run.model_id,
        "effort": run.effort,
        "sdk_version": run.sdk_version,
        "protocol_version": run.protocol_version,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "total_tokens": run.total_tokens,
        "cache_read_tokens": run.cache_read_tokens,
        "cache_write_tokens": run.cache_write_tokens,
        "credits_charged": run.credits_charged,
        "tool_names": list(run.tool_names),
        "failed_tool_names": list(run.failed_tool_names),
        "component_kinds": list(run.component_kinds),
        "error_code": run.error_code,
        "first_chunk_at": iso(run.first_chunk_at),
        "completed_at": iso(run.completed_at),
        "total_turn_latency_ms": run.total_turn_latency_ms,
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
    }
