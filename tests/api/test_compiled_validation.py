"""The compiled validation (apps.api.compiled) answers as the serializer it is built from: for
every ingest record field and a spread of good and bad values, it either defers to the
serializer (None) or returns exactly what the serializer returns, never accepting what the
serializer refuses. And it does answer for ordinary records (else it would buy nothing)."""

import pytest
from rest_framework import serializers

from apps.activity.records import RECORD_SERIALIZERS
from apps.activity.serializers import AuthTokenCreateIn
from apps.api.compiled import compile_serializer

WHEN = "2025-01-31T12:00:00Z"
BASES = {
    "user": {"type": "user", "id": "usr_1", "external_id": "ext-1", "identity_type": "user",
             "display_name": "Ada", "email": "ada@example.com",
             "avatar_url": "https://example.com/a.png", "first_seen_at": WHEN,
             "last_seen_at": "2025-01-31T14:00:00+02:00"},
    "conversation": {"type": "conversation", "id": "conv_1", "title": "Hello",
                     "status": "completed", "source": "embed", "user_id": "usr_1",
                     "created_at": WHEN, "updated_at": WHEN},
    "message": {"type": "message", "id": "msg_1", "conversation_id": "conv_1", "role": "user",
                "parts": [{"type": "text", "text": "hi"}], "source_id": "s", "run_id": "run_1",
                "created_at": WHEN, "updated_at": None},
    "run": {"type": "run", "id": "run_1", "conversation_id": "conv_1", "user_id": None,
            "request_id": "req_1", "status": "completed", "model_id": "gpt-4.1-mini",
            "effort": "low", "sdk_version": "5.0.12", "protocol_version": 1,
            "input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cache_read_tokens": 0,
            "cache_write_tokens": None, "credits_charged": 0.42, "tool_names": ["lookup"],
            "failed_tool_names": [], "component_kinds": ["text"], "error_code": None,
            "first_chunk_at": WHEN, "completed_at": WHEN, "total_turn_latency_ms": 2870,
            "created_at": WHEN, "updated_at": WHEN},
    "step": {"type": "step", "id": "step_1", "run_id": "run_1", "parent_id": None,
             "kind": "model", "name": "chat", "status": "completed", "error": "",
             "started_at": WHEN, "ended_at": WHEN, "duration_ms": 1.5,
             "input": {"messages": [1, 2]}, "output": "text", "model_id": "m",
             "input_tokens": 1, "output_tokens": 2, "total_tokens": 3, "cache_read_tokens": None,
             "cache_write_tokens": 0, "credits_charged": 0, "first_token_ms": 3,
             "finish_reason": "stop", "tool_name": None, "mcp_server": None, "query": " q ",
             "documents": [{"document_id": "doc_1", "score": 0.5}],
             "attributes": {"k": "v"}},
}  # fmt: skip
VALUES = [
    None, "", "  ", " x", "x ", "x", "x" * 64, "x" * 65, "x" * 255, "x" * 256, "x" * 501,
    "a\x00b", "a\ud800b", "é", "run_1", "bad id!", "9", 0, -1, 1, 7, 10**101, 1.5, -0.5, True,
    False, [], ["a"], ["a" * 256], [1], [" a"], {}, {"k": "v"}, {"k": "\x00"}, WHEN,
    "2025-01-31T12:00:00", "2025-01-31 12:00:00+05:30", "2025-13-01T00:00:00Z", "ada@example.com",
    "not an email", "https://example.com/x", "ftp://example.com", [{"document_id": "d"}],
    [{"unknown": 1}], [{"score": "high"}], [None],
]  # fmt: skip


def _serializer_answer(serializer, data):
    try:
        return True, dict(serializer.run_validation(data))
    except (serializers.ValidationError, TypeError):  # TypeError: orjson and a lone surrogate
        return False, None


def _cases():
    for kind, base in BASES.items():
        yield kind, base
        for name in RECORD_SERIALIZERS[kind]().fields:
            choices = getattr(RECORD_SERIALIZERS[kind]().fields[name], "choices", {})
            for value in [*VALUES, *choices]:
                yield kind, {**base, name: value}
            yield kind, {key: value for key, value in base.items() if key != name}
        yield kind, {**base, "unknown": 1}
    yield "run", []
    yield "run", None


@pytest.mark.parametrize("kind", list(BASES))
def test_compiled_record_validation_answers_ordinary_records(kind):
    serializer = RECORD_SERIALIZERS[kind]()
    assert (
        compile_serializer(serializer)(BASES[kind])
        == _serializer_answer(serializer, BASES[kind])[1]
    )


def test_compiled_record_validation_never_disagrees_with_the_serializer():
    answered = deferred = 0
    for kind, data in _cases():
        serializer = RECORD_SERIALIZERS[kind]()
        compiled = compile_serializer(serializer)(data)
        if compiled is None:
            deferred += 1
            continue
        answered += 1
        accepted, validated = _serializer_answer(serializer, data)
        assert accepted, f"compiled accepted what {kind} refuses: {data!r}"
        assert compiled == validated, data
        assert [type(value) for value in compiled.values()] == [
            type(value) for value in validated.values()
        ]
    assert answered > 500 and deferred > 500


def test_compiled_validation_of_other_strict_serializers_agrees():
    serializer = AuthTokenCreateIn()
    compiled = compile_serializer(serializer)
    for value in VALUES:
        data = {"external_id": value, "expires_in": 3600}
        answer = compiled(data)
        if answer is not None:
            assert (True, answer) == _serializer_answer(serializer, data)
    assert compiled({"external_id": "ext"}) == {"external_id": "ext"}
    assert compiled({}) is None  # a required field missing: the serializer words it
