"""JSON read and laid out: the small-file render, the outline of a large file (``json_outline``,
or below when msgspec will not read it), the parse (orjson, else the json module) with the
cyclic collector paused, and the one clean-up pass over the markdown."""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ..errors import ExtractionFailed
from ..json_outline import render_outline
from ..markdown import clean_text, escape_block_starts, escape_inline
from ..result import Extraction
from ..text import decode_or_fail
from ..tools import memory_left
from .json_blocks import _CONTAINERS, _block, _is_section, _member_lines, _one_line, _scalar

# Past this size JSON is written as an outline (sections, then one compact JSON line per
# item) rather than tables and nested lists: faster than reading the file as text.
OUTLINE_FROM_BYTES = 1024 * 1024


# Python objects take up to this many bytes per byte of JSON (a file of empty arrays).
_PARSED_BYTES_PER_BYTE = 40


_CLEANABLE_UTF8 = re.compile(rb"\xc2[\x80-\x9f]|\xef[\xac-\xbb]")


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
