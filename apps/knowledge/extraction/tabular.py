"""CSV and JSON.

CSV: the text is decoded like every text kind (UTF-8, else charset-normalizer's guess, so
Shift-JIS works); the delimiter is the one of ``, ; TAB |`` that splits the first rows into the
same number of fields most consistently (``csv.Sniffer`` picks ``,`` for a semicolon file with
commas inside fields). The file becomes one markdown table, first row as header, capped at
``MAX_ROWS`` rows and ``MAX_COLUMNS`` columns with a note saying so.

JSON: rendered as markdown that keeps its structure, so it chunks and searches well:

* an object's scalar members (and arrays of scalars, joined with ", ") are a list of
  ``**key**: value`` items; at the top level, each member holding an object or an array of
  objects or arrays gets a ``## key`` section;
* an array of objects is a table, one row per object (every object: no row cap) and one column
  per key (past ``RECORD_COLUMNS`` keys of which a third or more hold identifiers — hashes,
  UUIDs, timestamps, URLs — one ``- **key**: value · **key**: value`` item per object instead,
  so the value that means something is indexed beside its key), nested objects flattened to ``parent.child`` columns (arrays of scalars joined with
  ", ", deeper structures as compact JSON) — when that gives at most ``MAX_COLUMNS`` columns
  and is not bigger than the JSON it shows (sparse records read better as a list);
* anything else is a nested list; an array of scalars is one item, so a matrix is one line per
  row. Below ``MAX_DEPTH`` levels values are compact JSON.

Files past ``OUTLINE_FROM_BYTES`` are written as an outline instead (``json_outline``): the
same top-level items and ``## key`` sections, then one compact JSON line per item of an array
(``- **key**: <JSON>`` per member of an object), lines too long for search split under their
key paths. It is written from msgspec's byte slices without making Python objects of the
values, faster than the text pass-through and never bigger than the input
(``benchmarks/json_extraction.py``, figures in docs/performance.md). A large file msgspec will
not read (another encoding, a BOM, NaN, ...) is parsed below and written by
``render_json_outline``: the same sections and lines, without splitting long ones (and with
objects' string members unquoted).

Speed of the parse below: orjson parses UTF-8 bytes directly (the json module, slower, takes
other encodings, NaN and numbers past 64 bits, locates syntax errors, and parses when the
memory cap is too tight for orjson, which aborts rather than raising MemoryError); the cyclic
garbage collector is paused while millions of objects are made; markdown clean-up runs once
over the whole text, and only when the bytes can hold what it removes. Invalid or truncated
JSON fails with the position of the error.
"""

from __future__ import annotations

import contextlib
import csv
import gc
import io
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from .errors import ExtractionFailed
from .json_outline import render_outline
from .markdown import clean_text, escape_block_starts, escape_inline, join_blocks, markdown_table
from .result import Extraction
from .text import decode_or_fail
from .tools import memory_left

MAX_ROWS = 2_000
MAX_COLUMNS = 100
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
# Past this size JSON is written as an outline (sections, then one compact JSON line per
# item) rather than tables and nested lists: faster than reading the file as text.
OUTLINE_FROM_BYTES = 1024 * 1024
_DELIMITERS = (",", ";", "\t", "|")
_SNIFF_CHARS = 64 * 1024
_CELL = "\ue000"
# Python objects take up to this many bytes per byte of JSON (a file of empty arrays).
_PARSED_BYTES_PER_BYTE = 40
_CONTAINERS = frozenset((dict, list))
_TYPES_DICT = frozenset((dict,))
# Types whose str() is their JSON text (bool and None are not: True, None).
_TYPES_PRINTED_BY_STR = frozenset((str, int))
_CLEANABLE_UTF8 = re.compile(rb"\xc2[\x80-\x9f]|\xef[\xac-\xbb]")
_LINE_BREAK = re.compile(r"\s*[\r\n]\s*")
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
    if len(data) > OUTLINE_FROM_BYTES:
        outline = render_outline(data)
        if outline is not None:
            return Extraction(markdown=outline, page_count=None, title=None)
    # Parsing makes millions of objects, none of them garbage: the cyclic collector would
    # walk them again and again for nothing (a third of the time on a 10 MB file).
    with _collector_paused():
        value, from_utf8 = _parse_json(data)
        clean = not from_utf8 or _may_need_cleaning(data)
        if len(data) > OUTLINE_FROM_BYTES:
            markdown = render_json_outline(value, clean=clean)
        else:
            markdown = render_json(value, clean=clean)
        del value
    return Extraction(markdown=markdown + "\n" if markdown else "", page_count=None, title=None)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_json(data: bytes) -> tuple[Any, bool]:
    """The value, and whether it was read straight from UTF-8 bytes by orjson.

    orjson reads UTF-8 bytes directly, checking them as it goes, several times faster than
    decoding and parsing with the json module. Anything it refuses (another encoding, a BOM,
    NaN, integers past 64 bits, an error to locate) goes the slow way for its answer.
    """
    budget = memory_left()
    # orjson aborts the process when an allocation fails, where the json module raises
    # MemoryError; under a memory cap too tight for the file, the json module it is.
    if budget is None or len(data) * _PARSED_BYTES_PER_BYTE < budget:
        try:
            return orjson.loads(data), True
        except orjson.JSONDecodeError:
            pass
    text = decode_or_fail(data)
    try:
        return json.loads(text), False
    except json.JSONDecodeError as exc:
        raise ExtractionFailed(
            f"The JSON is invalid or truncated (error at line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise ExtractionFailed("The JSON is nested too deeply to read.") from None


def _may_need_cleaning(data: bytes) -> bool:
    """Whether valid UTF-8 JSON can hold what ``clean_text`` removes or rewrites.

    Raw control characters are not allowed in JSON strings, so C0 controls only come from
    escapes (``\\u0000``, ``\\b``, ``\\f``, ``\\r``); C1 controls are U+0080-U+009F (UTF-8
    C2 80-9F) and presentation forms U+FB00-U+FDFF, U+FE70-U+FEFF (EF AC-BB). Looking for
    those bytes is much faster than running the clean-up regexes over millions of characters.
    """
    if any(escape in data for escape in (b"\\u", b"\\b", b"\\f", b"\\r")):
        return True
    if data.isascii() or (b"\xc2" not in data and b"\xef" not in data):
        return False
    return _CLEANABLE_UTF8.search(data) is not None


def _render_sections(
    value: Any,
    *,
    is_section: Callable[[Any], bool],
    block: Callable[[Any], str],
    clean: bool,
) -> str:
    """A top-level object's scalar members as lines and its `is_section` members as `##`
    sections rendered by `block`; any other top-level value is one block."""
    blocks: list[str] = []
    if type(value) is dict:
        lines: list[str] = []
        for key, member in value.items():
            if not is_section(member):
                _member_lines(key, member, "", lines)
                continue
            if lines:
                blocks.append("\n".join(lines))
                lines = []
            blocks.append(f"## {' '.join(str(key).split()) or '(empty key)'}")
            blocks.append(block(member))
        if lines:
            blocks.append("\n".join(lines))
    else:
        blocks.append(block(value))
    # One clean-up pass over everything (control characters, ligatures, raw HTML openers)
    # rather than one per value: a 10 MB file holds millions of values.
    markdown = "\n\n".join(part for part in blocks if part)
    return escape_inline(clean_text(markdown) if clean else markdown)


def render_json(value: Any, *, clean: bool = True) -> str:
    """The markdown of a parsed JSON value (see the module docstring)."""
    return _render_sections(value, is_section=_is_section, block=_block, clean=clean)


def render_json_outline(value: Any, *, clean: bool = True) -> str:
    """Large JSON that ``render_outline`` could not read: sections and items as in
    ``render_json``, values as compact JSON lines."""
    return _render_sections(
        value,
        is_section=lambda member: type(member) in _CONTAINERS and bool(member),
        block=_outline_block,
        clean=clean,
    )


def _outline_block(value: Any) -> str:
    if type(value) is list:
        # One line per item. A compact JSON value never starts a markdown heading, fence or
        # list item, and orjson escapes line breaks inside strings.
        return b"\n".join(map(orjson.dumps, value)).decode()
    if type(value) is dict:
        return "\n".join(
            f"- **{_one_line(str(key))}**: "
            + (member if type(member) is str and "\n" not in member else _compact(member))
            for key, member in value.items()
        )
    return escape_block_starts(_scalar(value))


def _compact(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text[1:-1] if type(value) is str else text


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
