"""Cursors signed with the real SECRET_KEY but holding odd payloads (issue 24, item 3): every
list answers 400, never 500. The signature only says the server wrote the cursor once; a leaked
key, an older version or a cursor of another shape must still be refused by `cursor_decode`,
which checks every field's type for every list."""

from __future__ import annotations

import re
import sys

import pytest
from django.core import signing
from django.test import Client

from apps.activity.selectors import conversation_list_sorted, run_list_sorted
from apps.api.scopes import ALL_SCOPES
from apps.common.errors import BadRequest
from apps.common.keyset import Keyset, cursor_decode, cursor_encode
from tests.activity.factories import conversation_factory, message_factory
from tests.api.test_scope_and_tenancy_matrix import OPERATIONS

pytestmark = pytest.mark.django_db

T = "2026-01-01T00:00:00+00:00"
FORGED_PAYLOADS = [
    {"v": 5, "i": "x"},
    {"t": "x", "i": "x"},
    {"t": 5, "i": "x"},
    {"t": None, "i": "x"},
    {"v": None, "i": None},
    {"t": T, "i": None},
    {"t": T, "i": True},
    {"t": T, "i": 1.5},
    {"t": T, "i": "a\x00b"},
    {"t": "2026-01-01T00:00:00", "i": "x"},
    {"t": "0001-01-01T00:00:00+14:00", "i": "x"},
    {"t": "9999-12-31T23:59:59-14:00", "i": "x"},
    {"v": "\x00", "i": "x"},
    {"v": True, "i": "x"},
    {"v": [1], "i": "x"},
    {"v": {"a": 1}, "i": "x"},
    {"v": 2**70, "i": "x"},
    {"v": float("inf"), "i": "x"},
    {"v": float("nan"), "i": "x"},
    {"v": "x" * 10_000, "i": "x"},
    {"t": T, "v": 1, "i": "x"},
    {"i": "x"},
    {},
    [],
    "text",
    5,
    None,
]


def _keysets() -> list[Keyset]:
    """Every keyset the code defines (module constants; /v1 lists use these)."""
    found = {
        value.name: value
        for name, module in list(sys.modules.items())
        if name.startswith("apps.")
        for value in list(vars(module).values())
        if isinstance(value, Keyset)
    }
    return sorted(found.values(), key=lambda keyset: keyset.name)


def _forged(name: str, payload) -> str:
    return signing.dumps(payload, salt=f"cursor:{name}", compress=True)


@pytest.mark.parametrize("kind", ["time", "number", "text"])
@pytest.mark.parametrize("payload", FORGED_PAYLOADS, ids=repr)
def test_cursor_decode_refuses_every_odd_payload(kind, payload):
    keyset = Keyset("forged", "f", descending=True, value_kind=kind)
    cursor = _forged(keyset.name, payload)
    if kind == "number" and payload == {"v": 5, "i": "x"}:  # the one well-formed payload
        assert cursor_decode(keyset, cursor) == (5, "x")
        return
    with pytest.raises(BadRequest):
        cursor_decode(keyset, cursor)


@pytest.mark.parametrize("kind", ["time", "number", "text"])
def test_cursor_decode_reads_back_what_cursor_encode_wrote(kind):
    from datetime import UTC, datetime

    keyset = Keyset("round-trip", "f", descending=True, value_kind=kind)
    value = {"time": datetime(2026, 1, 1, tzinfo=UTC), "number": 3.5, "text": "alpha"}[kind]
    assert cursor_decode(keyset, cursor_encode(keyset, value, "row_1")) == (value, "row_1")


def test_every_sorted_list_keyset_is_known():
    # The console's sorted orders make their keysets on demand.
    for sort in ("tokens", "credits", "latency", "unknown"):
        for descending in (True, False):
            _queryset, keyset = run_list_sorted(_NoAnnotate(), sort=sort, descending=descending)
            assert keyset.kind in {"time", "number"}
    for sort in ("", "created"):
        _queryset, keyset = conversation_list_sorted(None, sort=sort, descending=False)
        assert keyset.kind == "time"


class _NoAnnotate:
    def annotate(self, **kwargs):
        return self


_PARAM = re.compile(r"\{([^}]+)\}")


def _list_paths(agent_id: str, conversation_id: str) -> list[str]:
    paths = []
    for param in OPERATIONS:
        path, method, _scope = param.values
        if method != "get" or path.startswith("/v1/me"):
            continue
        names = set(_PARAM.findall(path))
        if not names <= {"agent_id", "agentId", "conversation_id", "id"}:
            continue
        if "id" in names and "/conversations/{id}/messages" not in path:
            continue
        concrete = path.replace("{agent_id}", agent_id).replace("{agentId}", agent_id)
        concrete = concrete.replace("{conversation_id}", conversation_id)
        concrete = concrete.replace("{id}", conversation_id)
        paths.append(concrete)
    return paths


def test_forged_cursors_on_every_list_are_bad_request(make_api, agent, settings):
    settings.API_RATE_LIMIT = "100000/minute"
    api = make_api(list(ALL_SCOPES))
    conversation = conversation_factory(agent=agent)
    message_factory(conversation=conversation)
    client = Client()
    headers = {"Authorization": f"Bearer {api.raw_key}"}
    keysets = _keysets()
    covered = []
    for path in _list_paths(agent.pk, conversation.id):
        probe = client.get(path, {"limit": 1}, headers=headers)
        if probe.status_code != 200 or "next_cursor" not in probe.json():
            continue
        # The list's own keyset: the one whose well-formed cursor it accepts.
        own = [
            keyset
            for keyset in keysets
            if client.get(path, {"after": _well_formed(keyset)}, headers=headers).status_code == 200
        ]
        assert own, f"no keyset's cursor is accepted by {path}"
        for keyset in own:
            for payload in FORGED_PAYLOADS:
                answer = client.get(path, {"after": _forged(keyset.name, payload)}, headers=headers)
                assert answer.status_code in (200, 400), (path, payload, answer.content)
                if answer.status_code == 400:
                    assert answer.json()["name"] == "bad_request"
        covered.append(path)
    assert len(covered) >= 10, covered


def _well_formed(keyset: Keyset) -> str:
    from datetime import UTC, datetime

    value = {"time": datetime(2026, 1, 1, tzinfo=UTC), "number": 5, "text": "m"}[keyset.kind]
    return cursor_encode(keyset, value, "zzz")
