"""What word search indexes of a message and of a step, computed when recording writes them.

A message is indexed by the text of its `text` and `reasoning` parts; a step by the strings of
its input, output, error and retrieval query. Each row keeps `search_text` (that text, CJK runs
cut into character pairs as knowledge search cuts them) and `search_config` (the PostgreSQL text
search configuration of its language, apps.common.lexical). PostgreSQL derives a stored
`search_vector` from the two (a generated column, migration 0015) with a GIN index; SQLite keeps
an FTS5 table in step by triggers. Messages are few per run and detected by language; a
thousand OpenTelemetry steps a request are told by their script only (lexical.script_config).
"""

from collections.abc import Iterable, Mapping
from typing import Any

from apps.common import lexical

# Characters of a message's (a step's) text that are indexed; the rest is not searchable.
MESSAGE_TEXT_LIMIT = 20_000
STEP_TEXT_LIMIT = 4_000
MESSAGE_PART_TYPES = frozenset({"text", "reasoning"})
# Keys whose values are structure, not what was said (AI SDK and OpenAI message shapes).
_STRUCTURE_KEYS = frozenset(
    {"type", "role", "id", "toolCallId", "tool_call_id", "state", "providerMetadata",
     "providerOptions", "callProviderMetadata", "mediaType", "finish_reason"}
)  # fmt: skip
STEP_SOURCES = ("input", "output", "error", "query")
SEARCH_FIELDS = ("search_text", "search_config")
_ANGLE_BRACKETS = str.maketrans("<>", "  ")


def message_text(parts: Any) -> str:
    """The words of a message: its text and reasoning parts, one paragraph each."""
    if not isinstance(parts, list):
        return ""
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") in MESSAGE_PART_TYPES
        and isinstance(part.get("text"), str)
    ]
    return "\n\n".join(texts)[:MESSAGE_TEXT_LIMIT]


def _strings(value: Any, out: list[str], budget: int) -> int:
    """Append the strings of a JSON value (not its keys, nor structure keys' values) to `out`
    until `budget` characters; returns the budget left."""
    if budget <= 0:
        return budget
    if isinstance(value, str):
        out.append(value[:budget])
        return budget - len(out[-1]) - 1
    # JSON values: a dict, not any Mapping (an ABC check, slow for a thousand steps a request).
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in _STRUCTURE_KEYS:
                budget = _strings(item, out, budget)
    elif isinstance(value, list):
        for item in value:
            budget = _strings(item, out, budget)
    return budget


def step_text(values: Mapping[str, Any]) -> str:
    """The words of a step: the strings of its input, output, error and query."""
    out: list[str] = []
    budget = STEP_TEXT_LIMIT
    for name in STEP_SOURCES:
        budget = _strings(values.get(name), out, budget)
    return "\n".join(out)


def _fields(text: str, *, detect: bool) -> dict[str, Any]:
    if not text.strip():
        return {"search_text": None, "search_config": "simple"}
    # The checks in C first: most steps' text is ASCII and holds no angle bracket.
    if not text.isascii() and lexical.has_cjk(text):
        text = lexical.cjk_bigrams(text)
    if "<" in text or ">" in text:
        # PostgreSQL's parser reads <...> as a tag and drops what is inside.
        text = text.translate(_ANGLE_BRACKETS)
    return {
        "search_text": text,
        "search_config": lexical.text_config(text, detect=detect),
    }


def message_search_fields(parts: Any) -> dict[str, Any]:
    """`search_text` and `search_config` of a message with these parts."""
    return _fields(message_text(parts), detect=True)


def step_search_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """`search_text` and `search_config` of a step with these values (by attribute name)."""
    return _fields(step_text(values), detect=False)


def step_sources_changed(names: Iterable[str]) -> bool:
    return any(name in STEP_SOURCES for name in names)


# --- SQLite (the embedded default): FTS5 tables kept by triggers --------------------------------

_FTS_TABLES = (
    ("activity_message", "activity_message_fts"),
    ("activity_runstep", "activity_step_fts"),
)


def _sqlite_statements(table: str, fts: str) -> list[str]:
    remove = (
        f"INSERT INTO {fts}({fts}, rowid, search_text) "
        "SELECT 'delete', old.row, old.search_text WHERE old.search_text IS NOT NULL;"
    )
    add = (
        f"INSERT INTO {fts}(rowid, search_text) "
        "SELECT new.row, new.search_text WHERE new.search_text IS NOT NULL;"
    )
    return [
        f"CREATE TRIGGER IF NOT EXISTS {fts}_insert AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_delete AFTER DELETE ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_update AFTER UPDATE OF search_text ON {table} "
        f"BEGIN {remove} {add} END",
    ]


def sqlite_fts_ensure(*, using: str = "default", **_kwargs: Any) -> None:
    """Create the FTS5 tables and their triggers where missing, after every `migrate`: SQLite
    rebuilds a table that a migration alters, and its triggers go with the old one. A table
    made now is filled from the rows already there."""
    from django.db import connections

    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor))
        for table, fts in _FTS_TABLES:
            if table not in tables:
                continue
            if fts not in tables:
                cursor.execute(
                    f"CREATE VIRTUAL TABLE {fts} USING fts5(search_text, content='{table}', "
                    "content_rowid='row', tokenize='unicode61 remove_diacritics 2')"
                )
                cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")  # noqa: S608
            for statement in _sqlite_statements(table, fts):
                cursor.execute(statement)
