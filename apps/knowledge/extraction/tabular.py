"""CSV and JSON.

CSV: the text is decoded like every text kind (UTF-8, else charset-normalizer's guess, so
Shift-JIS works); the delimiter is the one of ``, ; TAB |`` that splits the first rows into the
same number of fields most consistently (``csv.Sniffer`` picks ``,`` for a semicolon file with
commas inside fields). The file becomes one markdown table, first row as header, capped at
``MAX_ROWS`` rows and ``MAX_COLUMNS`` columns with a note saying so.

JSON: rendered as readable markdown rather than a code block, so it chunks and searches well:

* an object's scalar members are a list of ``**key**: value`` items; at the top level, each
  member holding an object or array gets a ``## key`` section;
* an array of objects is a table, one row per object and one column per key, nested objects
  flattened to ``parent.child`` columns (arrays of scalars joined with ", ", deeper structures
  as compact JSON) — when that gives at most ``MAX_COLUMNS`` columns;
* anything else is a nested list. Invalid or truncated JSON fails with the position of the error.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from .errors import ExtractionFailed
from .markdown import escape_inline, escape_text, join_blocks, markdown_list, markdown_table
from .result import Extraction
from .text import decode_or_fail

MAX_ROWS = 2_000
MAX_COLUMNS = 100
MAX_DEPTH = 40
_DELIMITERS = (",", ";", "\t", "|")
_SNIFF_CHARS = 64 * 1024
# Fields can hold whole documents; the csv module's default limit is 128 KiB.
csv.field_size_limit(16 * 1024 * 1024)


# --- CSV ---------------------------------------------------------------------------------------


def extract_csv(data: bytes) -> Extraction:
    text = decode_or_fail(data)
    delimiter = sniff_delimiter(text)
    rows: list[list[str]] = []
    cut_rows = cut_columns = False
    try:
        for row in csv.reader(io.StringIO(text), delimiter=delimiter, strict=False):
            if not any(cell.strip() for cell in row):
                continue
            if len(rows) > MAX_ROWS:  # header + MAX_ROWS data rows
                cut_rows = True
                break
            if len(row) > MAX_COLUMNS:
                cut_columns = True
                row = row[:MAX_COLUMNS]
            rows.append(row)
    except csv.Error:
        raise ExtractionFailed("The CSV file is malformed and could not be read.") from None
    notes = []
    if cut_rows:
        notes.append(f"_Only the first {MAX_ROWS:,} rows of this file are shown._")
    if cut_columns:
        notes.append(f"_Only the first {MAX_COLUMNS} columns of this file are shown._")
    return Extraction(
        markdown=join_blocks([markdown_table(rows), *notes]) + "\n", page_count=None, title=None
    )


def sniff_delimiter(text: str) -> str:
    """The delimiter giving the most rows with the same field count (more than one field)."""
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]
    best, best_score = ",", (0.0, 0)
    for delimiter in _DELIMITERS:
        try:
            counts = [
                len(row) for row in csv.reader(io.StringIO(sample), delimiter=delimiter) if row
            ]
        except csv.Error:
            continue
        if not counts:
            continue
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        score = (counts.count(mode) / len(counts), mode)
        if score > best_score:
            best, best_score = delimiter, score
    return best


# --- JSON --------------------------------------------------------------------------------------


def extract_json(data: bytes) -> Extraction:
    text = decode_or_fail(data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExtractionFailed(
            f"The JSON is invalid or truncated (error at line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise ExtractionFailed("The JSON is nested too deeply to read.") from None
    return Extraction(markdown=render_json(value) + "\n", page_count=None, title=None)


def render_json(value: Any) -> str:
    if isinstance(value, dict):
        blocks = []
        scalars: list[tuple[int, str, str]] = []
        for key, member in value.items():
            if _is_scalar(member):
                scalars.append((0, "-", f"**{key}**: {_scalar(member)}"))
                continue
            if scalars:
                blocks.append(markdown_list(scalars))
                scalars = []
            blocks.append(f"## {escape_inline(' '.join(str(key).split())) or '(empty key)'}")
            blocks.append(_block(member))
        if scalars:
            blocks.append(markdown_list(scalars))
        return join_blocks(blocks)
    return _block(value)


def _block(value: Any) -> str:
    if _is_scalar(value):
        return escape_text(_scalar(value))
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        table = _table(value)
        if table:
            return table
    return markdown_list(_items(value, level=0))


def _table(objects: list[dict[str, Any]]) -> str:
    rows = [_flatten(item) for item in objects[:MAX_ROWS]]
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
        if len(columns) > MAX_COLUMNS:
            return ""
    header = list(columns)
    table = markdown_table([header, *([row.get(column, "") for column in header] for row in rows)])
    if len(objects) > MAX_ROWS:
        table += f"\n\n_Only the first {MAX_ROWS:,} of {len(objects):,} items are shown._"
    return table


def _flatten(value: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, member in value.items():
        name = f"{prefix}{key}"
        if isinstance(member, dict) and member and depth < 3:
            flat.update(_flatten(member, f"{name}.", depth + 1))
        elif isinstance(member, list) and all(_is_scalar(item) for item in member):
            flat[name] = ", ".join(_scalar(item) for item in member)
        elif _is_scalar(member):
            flat[name] = _scalar(member)
        else:
            flat[name] = json.dumps(member, ensure_ascii=False, separators=(",", ":"))
    return flat


def _items(value: Any, *, level: int) -> Iterator[tuple[int, str, str]]:
    if level >= MAX_DEPTH:
        yield level, "-", json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return
    if isinstance(value, dict):
        for key, member in value.items():
            if _is_scalar(member):
                yield level, "-", f"**{key}**: {_scalar(member)}"
            else:
                yield level, "-", f"**{key}**:"
                yield from _items(member, level=level + 1)
    elif isinstance(value, list):
        for index, member in enumerate(value, start=1):
            if _is_scalar(member):
                yield level, "-", _scalar(member)
            else:
                yield level, "-", f"({index})"
                yield from _items(member, level=level + 1)
    else:
        yield level, "-", _scalar(value)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list) or not value


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
