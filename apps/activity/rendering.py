"""Rows to the contract's objects (sections 2.2 to 2.5): plain functions, exact field sets.

These are the API's output path and the `data` of webhook run events, so they build dicts
straight from the row: no serializer, no extra query (foreign keys are read as `*_id`).
"""

from datetime import datetime

import orjson
from django.db.models import F, Func, QuerySet, TextField
from django.db.models.functions import Cast

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


# A run's fields in the contract's order (2.5), by how each is written out.
RUN_FIELDS: tuple[str, ...] = (
    "id", "conversation_id", "user_id", "request_id", "status", "model_id", "effort",
    "sdk_version", "protocol_version", "input_tokens", "output_tokens", "total_tokens",
    "cache_read_tokens", "cache_write_tokens", "credits_charged", "tool_names",
    "failed_tool_names", "component_kinds", "error_code", "first_chunk_at", "completed_at",
    "total_turn_latency_ms", "created_at", "updated_at",
)  # fmt: skip
_RUN_TIMES = frozenset({"first_chunk_at", "completed_at", "created_at", "updated_at"})
_RUN_LISTS = frozenset({"tool_names", "failed_tool_names", "component_kinds"})


def run_to_dict(run: Run) -> dict:
    out: dict = {"object": "run"}
    for name in RUN_FIELDS:
        value = getattr(run, name)
        if name in _RUN_TIMES:
            value = iso(value)
        elif name in _RUN_LISTS:
            value = list(value)
        out[name] = value
    return out


# --- The runs list's fast path (PostgreSQL) --------------------------------------------------
# A page of 100 runs spent most of its time making Run objects, parsing four timestamps per row
# (Django's time-zone loader is pure Python) only to write them back as text, and decoding JSON
# with the standard library (issue 14, benchmarks/profile_request.py). Here PostgreSQL writes
# the timestamps in the contract's form and the arrays as JSON text: rows are dicts, nothing is
# parsed but the arrays (by orjson) and the last row's cursor time.

# `iso()`'s form: UTC, milliseconds (truncated, as Python's isoformat does), a `Z`.
_ISO_TEMPLATE = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
# The cursor's: every microsecond, so paging stays exact.
_CURSOR_TEMPLATE = (
    "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US+00:00')"
)


def run_list_rows(queryset: QuerySet[Run]) -> QuerySet:
    """The runs of `queryset` as dicts ready for `run_row_to_dict` (PostgreSQL only)."""
    text = TextField()
    annotations: dict[str, Func] = {
        f"{name}_out": Func(F(name), template=_ISO_TEMPLATE, output_field=text)
        for name in _RUN_TIMES
    }
    annotations.update({f"{name}_out": Cast(name, text) for name in _RUN_LISTS})
    annotations["cursor_at"] = Func(F("created_at"), template=_CURSOR_TEMPLATE, output_field=text)
    plain = [name for name in RUN_FIELDS if name not in _RUN_TIMES and name not in _RUN_LISTS]
    return queryset.annotate(**annotations).values(*plain, *annotations)


def run_row_cursor(row: dict) -> tuple[datetime, str]:
    return datetime.fromisoformat(row["cursor_at"]), row["id"]


def run_row_to_dict(row: dict) -> dict:
    """The same object as `run_to_dict`, from a `run_list_rows` row."""
    out: dict = {"object": "run"}
    for name in RUN_FIELDS:
        if name in _RUN_TIMES:
            out[name] = row[f"{name}_out"]
        elif name in _RUN_LISTS:
            out[name] = orjson.loads(row[f"{name}_out"])
        else:
            out[name] = row[name]
    return out
