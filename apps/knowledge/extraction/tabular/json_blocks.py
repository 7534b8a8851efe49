"""JSON values as markdown blocks: an array of objects as a table (or as records when its columns
are mostly identifiers), anything else as a nested list, scalars as their JSON text."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from ..markdown import escape_block_starts, escape_inline
from .csv_table import MAX_COLUMNS

# Arrays of objects with more (flattened) keys than this are written as records, each value
# beside its key, instead of a table (``_records``).
RECORD_COLUMNS = 8
# ... when at least this share of them holds identifiers (``_mostly_opaque``).
OPAQUE_SHARE = 1 / 3
_OPAQUE = re.compile(
    r"[0-9a-fA-F]{16,}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|\d{9,}(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?|[a-z][a-z0-9+.-]*://\S+"
)
MAX_DEPTH = 40


_CELL = "\ue000"


_CONTAINERS = frozenset((dict, list))
_TYPES_DICT = frozenset((dict,))
# Types whose str() is their JSON text (bool and None are not: True, None).
_TYPES_PRINTED_BY_STR = frozenset((str, int))


_LINE_BREAK = re.compile(r"\s*[\r\n]\s*")


def _is_section(value: Any) -> bool:
    """A top-level member that gets its own ``## key`` section."""
    if type(value) is dict:
        return bool(value)
    return type(value) is list and not _all_scalars(value)


def _block(value: Any) -> str:
    if type(value) not in _CONTAINERS:
        return escape_block_starts(_scalar(value))
    if type(value) is list and value and set(map(type, value)) <= _TYPES_DICT:
        table = _table(value)
        if table:
            return table
    lines: list[str] = []
    _value_lines(value, "", lines, depth=0)
    return "\n".join(lines)


def _table(objects: list[dict[str, Any]]) -> str:
    """One row per object, one column per (flattened) key; "" when that would not fit."""
    rows = [_flatten(item) for item in objects]
    columns: dict[str, None] = {}
    for row in rows:
        if not columns.keys() >= row.keys():
            columns.update(dict.fromkeys(row))
            if len(columns) > MAX_COLUMNS:
                return ""
    header = list(columns)
    if len(header) > RECORD_COLUMNS and _mostly_opaque(rows, header):
        return _records(rows)
    lines = [_table_line(header), "|" + "---|" * len(header)]
    lines.extend(_table_line([row.get(column, "") for column in header]) for row in rows)
    table = "\n".join(lines)
    # Sparse records (many keys, each in few objects) make a table of empty cells, bigger
    # than the JSON; they read better as a list.
    if len(table) - len(lines[0]) - len(lines[1]) > len(orjson.dumps(objects)):
        return ""
    return table


def _mostly_opaque(rows: list[dict[str, str]], header: list[str]) -> bool:
    """Whether at least OPAQUE_SHARE of the columns hold identifiers (hashes, UUIDs, long
    numbers, timestamps, URLs) in most of the first rows: a table of such values hides the one
    that means something; a table of meaningful columns (an element table) stays a table."""
    sample = rows[:20]
    opaque = 0
    for column in header:
        values = [row.get(column, "") for row in sample]
        if sum(1 for value in values if _OPAQUE.fullmatch(value)) * 2 > len(values):
            opaque += 1
    return opaque >= OPAQUE_SHARE * len(header)


def _records(rows: list[dict[str, str]]) -> str:
    """One list item per object, each value after its key ("- **name**: Gold · **symbol**:
    Au"): in a wide table a value sits rows away from the header that says what it is, so a
    search for it (and its embedding window) sees ids, hashes and dates without their names."""
    lines = []
    for row in rows:
        pairs = (
            f"**{escape_inline(_one_line(key))}**: {_one_line(value)}"
            for key, value in row.items()
            if value != ""
        )
        lines.append("- " + " · ".join(pairs))
    return "\n".join(lines)


def _table_line(cells: list[str]) -> str:
    # Pipes are escaped and line breaks removed on the joined row: one call per row, not per
    # cell. The separator is a private-use character no cell holds after this replacement.
    joined = _CELL.join(cells)
    if joined.count(_CELL) != len(cells) - 1:
        joined = _CELL.join(cell.replace(_CELL, " ") for cell in cells)
    joined = joined.replace("|", "\\|")
    if "\n" in joined or "\r" in joined:
        joined = _LINE_BREAK.sub(" ", joined)
    return "| " + joined.replace(_CELL, " | ") + " |"


def _flatten(value: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, str]:
    # The hottest loop for record exports: type() checks, no isinstance unions.
    flat: dict[str, str] = {}
    for key, member in value.items():
        kind = type(member)
        if kind is str:
            flat[prefix + key] = member
        elif kind is dict and member and depth < 3:
            flat.update(_flatten(member, f"{prefix}{key}.", depth + 1))
        elif kind is list and _all_scalars(member):
            flat[prefix + key] = _joined(member)
        elif kind is dict or kind is list:
            flat[prefix + key] = orjson.dumps(member).decode()
        else:
            flat[prefix + key] = _scalar(member)
    return flat


def _member_lines(key: object, member: Any, indent: str, lines: list[str]) -> None:
    """``- **key**: value`` for one object member, its nested items below it."""
    name = _one_line(str(key))
    kind = type(member)
    if kind is str:
        lines.append(f"{indent}- **{name}**: {_one_line(member)}")
    elif (kind is not dict and kind is not list) or not member:
        lines.append(f"{indent}- **{name}**: {_scalar(member)}")
    elif kind is list and _all_scalars(member):
        lines.append(f"{indent}- **{name}**: {_joined(member)}")
    else:
        lines.append(f"{indent}- **{name}**:")
        _value_lines(member, indent + "  ", lines, depth=len(indent) // 2 + 1)


def _value_lines(value: Any, indent: str, lines: list[str], *, depth: int) -> None:
    if depth >= MAX_DEPTH:
        lines.append(f"{indent}- {_one_line(orjson.dumps(value).decode())}")
    elif type(value) is dict:
        for key, member in value.items():
            _member_lines(key, member, indent, lines)
    elif _all_scalars(value):
        # An array of scalars is one item: "1, 2, 3" (a matrix is one line per row).
        lines.append(f"{indent}- {_joined(value)}")
    else:
        for index, member in enumerate(value, start=1):
            kind = type(member)
            if (kind is not dict and kind is not list) or not member:
                lines.append(f"{indent}- {_one_line(_scalar(member))}")
            elif kind is list and _all_scalars(member):
                lines.append(f"{indent}- {_joined(member)}")
            else:
                lines.append(f"{indent}- ({index})")
                _value_lines(member, indent + "  ", lines, depth=depth + 1)


def _all_scalars(values: list[Any]) -> bool:
    """No non-empty object or array among ``values`` (empty ones print as ``{}``, ``[]``)."""
    if _CONTAINERS.isdisjoint(map(type, values)):
        return True
    return not any(type(item) in _CONTAINERS and item for item in values)


def _joined(values: list[Any]) -> str:
    """Scalars on one line, comma-separated; strings as they are."""
    types = set(map(type, values))
    if types <= _TYPES_PRINTED_BY_STR:
        joined = ", ".join(map(str, values))
    else:
        joined = ", ".join(map(_scalar, values))
    return _one_line(joined)


def _one_line(text: str) -> str:
    if "\n" in text or "\r" in text:
        return _LINE_BREAK.sub(" ", text)
    return text


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float and math.isfinite(value):
        return repr(value)  # what json.dumps writes, without its call overhead
    return json.dumps(value, ensure_ascii=False)
