"""Large JSON as an outline, written without turning the file into Python objects.

Parsing a 10 MB file into Python objects (orjson, the fastest at it) takes as long as the
whole text pass-through, before a line is written. This writer never does: msgspec, in C,
checks the syntax and drops the whitespace (``msgspec.json.format``); a regex finds the runs
of escapes, each distinct run decoded once (msgspec reads it as a JSON string); then msgspec
splits the compact text into its top-level members and their items as ``Raw`` byte slices,
and a long value further into its members the same way; the slices are joined into the
markdown with one copy. Python touches one object per line written, not one per value
(``benchmarks/json_extraction.py``, figures in docs/performance.md).

The outline (docs/knowledge.md):

* a top-level object's scalar members are ``- **key**: value`` items;
* each top-level member holding a non-empty array or object gets a ``## key`` section: an
  array's items are one compact JSON line each, an object's members ``- **key**: <JSON>``;
* a line longer than ``LINE_LIMIT`` bytes whose value is an object, or an array of objects or
  strings, is replaced by one line per member, ``- **path**: <JSON>``, the path relative to
  the section (``[12].geometry``, ``juliett_0.delta_0.victor_2[1]``), recursively, so long
  values keep their keys next to them in chunks of search size. Numbers are not taken apart
  (an array starting with a number, or arrays of arrays that do: coordinates, a matrix, a
  vector, stay one line), nor is anything ``_MAX_DEPTH`` levels down.

Size: splitting costs bytes (the paths); it spends at most the whitespace that compacting
the input saved (not what decoding escapes saves, so a file escaped to ASCII is split as the
same file unescaped). If the outline is still bigger than the input (a minified file of short
object members, where ``- **key**: `` is longer than ``"key":``), it is written without
splits, then with members as ``"key":<JSON>`` lines: never bigger than the input, but for a
backslash before each ``<`` that would open an HTML tag.

Escapes: ``\\uXXXX`` escapes of visible characters (a surrogate pair: the character it
encodes) and ``\\/`` are decoded, so "Zürich" that ``json.dumps`` wrote as ``Z\\u00fcrich``
is found as Zürich, and a file escaped to ASCII gets the outline of the same file unescaped;
escapes of quotes, backslashes and control characters (C0, DEL and C1) stay, so every line is
still valid JSON and shows no control character.

``render_outline`` returns None for what msgspec will not read: another encoding, a BOM, NaN,
lone surrogate escapes, floats past the double range at the top level, nesting deeper than
its recursion limit, and invalid JSON (whitespace inside a number or a word too: ``[1 2]``
is not ``[12]``); and for strings that are not UTF-8. The caller then takes the slow path,
which reads those or says where the error is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from itertools import chain, repeat
from typing import Any

import msgspec
from msgspec import Raw

from .markdown import clean_text, escape_block_starts, escape_inline

# Lines longer than this (bytes of compact JSON) are split by key when they hold an object or
# an array of sizable items: about two chunks of search (1,800 characters), so a chunk holds a
# line or half of one, its path at most one chunk away. Each level of splitting reads the
# value once more: at 1,500 the benchmark's deep "tree" file took 15 % longer than this.
LINE_LIMIT = 4000
# What a ``- **path**: `` line adds besides its path, against the ``"key":`` and the comma
# it replaces, rounded up: splitting a value only pays when its members are bigger than this.
_LINE_MARKUP = 12

_Member = list[Raw] | dict[str, Raw] | str | int | float | bool | None
# The top level in one pass: members that are arrays or objects come as lists or dicts of
# Raw items (one more level), scalars as values; a top-level array's items as Raw.
_TOP = msgspec.json.Decoder(dict[str, _Member] | list[Raw] | str | int | float | bool | None)
_OBJECT = msgspec.json.Decoder(dict[str, Raw])
_ARRAY = msgspec.json.Decoder(list[Raw])
_STRING = msgspec.json.Decoder(str)
_OBJECT_OPENER, _ARRAY_OPENER = ord("{"), ord("[")
_NUMBER_STARTS = frozenset(b"-0123456789")
# Paths deeper than this are no longer read (and Python's recursion stays far from its limit).
_MAX_DEPTH = 16
_ENCODE = msgspec.json.encode

# The escapes of valid JSON text that may be decoded (outside strings there is no backslash):
# a run of \uXXXX and \/ escapes, one after another (a surrogate pair is always within one
# run); an escaped backslash is matched too, as a pair, so that the backslash after it starts
# no escape. Every branch starts with the backslash, which the regex engine then looks for
# at memchr speed (written as an alternation of two branches, it took 450 ms over 10 MB
# escaped to ASCII where this takes 90, both on a loaded machine).
# The whole match is the group, so that ``split`` gives text and escapes in turn.
_ESCAPES = re.compile(
    rb"""( \\ (?:
        \\
        | (?: u[0-9a-fA-F]{4} | / ) (?: \\ (?: u[0-9a-fA-F]{4} | / ) )*
    ) )""",
    re.VERBOSE,
)
# One character of such a run: a surrogate pair, another \uXXXX, or \/.
_ESCAPED_CHARACTER = re.compile(rb"\\u[dD][89abAB]..\\u....|\\u....|\\/")
# Characters whose escapes stay: quote, backslash, C0 controls, DEL and C1 controls.
_STAYS_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f-\x9f]')

# What clean_text rewrites, as it can appear in compact UTF-8 JSON: C1 controls (C2 80-9F)
# and presentation forms (EF AC-BB); C0 controls cannot appear raw in valid JSON. Two
# patterns that each start with a literal byte are searched at memchr speed, one
# alternation is not (60 ms on 10 MB).
_CLEANABLE_UTF8 = (
    (b"\xc2", re.compile(rb"\xc2[\x80-\x9f]")),
    (b"\xef", re.compile(rb"\xef[\xac-\xbb]")),
)
_LINE_BREAK = re.compile(r"\s*[\r\n]\s*")
_NEWLINE = b"\n"


def render_outline(data: bytes) -> bytes | str | None:
    """The outline of a JSON document (module docstring), ending with a newline unless
    empty: UTF-8 bytes (``compact_json`` checked the strings, the rest is ours), or text when
    it had to be cleaned or escaped, which works on text. None when msgspec cannot read it or
    a string is not UTF-8."""
    compacted = compact_json(data)
    if compacted is None:
        return None
    # Splitting spends at most the whitespace that compacting saved (not what decoding
    # escapes saves: a file escaped to ASCII gets the outline of the file unescaped). What
    # the outline adds besides (``- **key**: `` where the JSON had ``"key":``) can still make
    # a minified file's outline bigger; then it is written again without splits, and if need
    # be with members as they were, ``"key":<JSON>``, which is never bigger.
    compact, budget = compacted
    try:
        value = _TOP.decode(compact)
    except (msgspec.DecodeError, RecursionError):
        return None
    markdown = _Outline(budget).document(value)
    if len(markdown) > len(data) and budget:
        markdown = _Outline(0).document(value)
    if len(markdown) > len(data):
        markdown = _Outline(0, quoted=True).document(value)
    cleanable = any(
        lead in compact and pattern.search(compact) for lead, pattern in _CLEANABLE_UTF8
    )
    html = b"<" in compact
    if not cleanable and not html:
        return markdown
    text = markdown.decode()
    if cleanable:
        text = clean_text(text)
    if html:
        text = escape_inline(text)
    return text


def compact_json(data: bytes) -> tuple[bytes, int] | None:
    """The JSON without whitespace between its tokens, the escapes of visible characters
    decoded (module docstring), and the number of whitespace bytes dropped; None when msgspec
    finds it invalid or a string is not UTF-8."""
    try:
        compact = msgspec.json.format(data, indent=-1)
    except (msgspec.DecodeError, RecursionError):
        return None
    dropped = len(data) - len(compact)
    # msgspec copies the bytes of strings unchecked; escapes are decoded to valid UTF-8 below.
    if not compact.isascii():
        try:
            compact.decode()
        except UnicodeDecodeError:
            return None
    # A one-byte search first: memchr.
    if b"\\" in compact:
        parts = _ESCAPES.split(compact)  # text, escapes, text, escapes, ..., text
        # The same words come back in every record: each run is decoded once, and the
        # cache's hits run in C, where a call into Python per run took 60 % of an escaped
        # file's outline. A cache per document: nothing of it stays in the worker.
        decoded = functools.lru_cache(maxsize=4096)(_decoded_escapes)
        parts[1::2] = map(decoded, parts[1::2])
        compact = b"".join(parts)
    return compact, dropped


def _decoded_escapes(escapes: bytes) -> bytes:
    """A run of escapes as UTF-8, but for those that stay escaped; an escaped backslash as
    it is."""
    if escapes == b"\\\\":
        return escapes
    # JSON's own reading: surrogate pairs joined, "\\/" a solidus (msgspec's format has
    # refused lone surrogates already).
    text = _STRING.decode(b'"' + escapes + b'"')
    if _STAYS_ESCAPED.search(text) is None:
        return text.encode()
    # Each character of the text is one escape of the run: those that stay are kept as
    # they were written.
    return b"".join(
        escape if _STAYS_ESCAPED.match(character) else character.encode()
        for escape, character in zip(_ESCAPED_CHARACTER.findall(escapes), text, strict=True)
    )


class _Outline:
    """Collects the outline as pieces of bytes (Raw slices of the compact JSON and the markup
    around them) joined once at the end: each byte of the values is copied once.

    ``budget`` is the bytes that splitting long lines may still add.
    """

    def __init__(self, budget: int, *, quoted: bool = False) -> None:
        self.budget = budget
        self.quoted = quoted
        self.out: list[Any] = []

    def document(self, value: Any) -> bytes:
        self.write(value)
        # Every line ends with a newline, the last one too: the text is returned as it is,
        # without another copy to add or strip one.
        return b"".join(self.out)

    def write(self, value: Any) -> None:
        out = self.out
        if type(value) is dict:
            after_block = False
            for key, member in value.items():
                kind = type(member)
                if (kind is not list and kind is not dict) or not member:
                    if after_block:
                        out.append(_NEWLINE)
                        after_block = False
                    if self.quoted:
                        out += (_ENCODE(key), b":", _ENCODE(member), _NEWLINE)
                    else:
                        out.append(f"- **{_text(key)}**: {_scalar(member)}\n".encode())
                    continue
                if out:
                    out.append(_NEWLINE)
                heading = " ".join(_text(key).split()) or "(empty key)"
                out.append(f"## {heading}\n\n".encode())
                if kind is list:
                    self.items(member, "")
                else:
                    self.members(member, "")
                after_block = True
        elif type(value) is list:
            self.items(value, "")
        else:
            scalar = escape_block_starts(_scalar(value))
            out.append(f"{scalar}\n".encode() if scalar else b"")

    def items(self, items: list[Raw], path: str, depth: int = 0) -> None:
        """One line per item of an array, a long item split by its members.

        At the top of a section (``path`` empty) an item is its compact JSON; deeper, it is
        ``- **path[index]**: <JSON>``.
        """
        out = self.out
        if path:
            for index, item in enumerate(items):
                item_path = f"{path}[{index}]"
                if len(item) <= LINE_LIMIT or not self.split(item, item_path, depth):
                    out += (f"- **{item_path}**: ".encode(), item, _NEWLINE)
        elif not items:
            return
        elif max(map(len, items)) <= LINE_LIMIT:
            # The common case, nothing to split: item, newline, item, ... in C.
            out += chain.from_iterable(zip(items, repeat(_NEWLINE)))
        else:
            for index, item in enumerate(items):
                if len(item) <= LINE_LIMIT or not self.split(item, f"[{index}]", depth):
                    out += (item, _NEWLINE)

    def members(self, members: dict[str, Raw], path: str, depth: int = 0) -> None:
        """``- **path**: <JSON>`` per member of an object, a long one split by its members."""
        out = self.out
        if self.quoted:
            for key, member in members.items():
                out += (_ENCODE(key), b":", member, _NEWLINE)
            return
        head = f"- **{path}." if path else "- **"
        pairs: Iterable[tuple[str, Raw]] = members.items()
        if not all(map(str.isprintable, members)):
            # A list, not a dict: two keys may read the same once cleaned; both are kept.
            pairs = [(_text(key), member) for key, member in pairs]
        if max(map(len, members.values()), default=0) <= LINE_LIMIT:
            for key, member in pairs:
                out += ((head + key + "**: ").encode(), member, _NEWLINE)
            return
        for key, member in pairs:
            if len(member) <= LINE_LIMIT or not self.split(
                member, f"{path}.{key}" if path else key, depth
            ):
                out += ((head + key + "**: ").encode(), member, _NEWLINE)

    def split(self, raw: Raw, path: str, depth: int = 0) -> bool:
        """Write a long object's or array's members as lines of their own when that is worth
        its cost in bytes (the paths) and the budget allows it.

        Reading the members reads the value once more, so numbers are not taken apart: an
        array whose first item is a number, or an array of arrays starting with one
        (coordinates, a matrix, a vector), stays one line. So does anything deeper than
        ``_MAX_DEPTH`` levels.
        """
        if depth >= _MAX_DEPTH:
            return False
        view = memoryview(raw)  # bytes are read where they are, nothing is copied
        if view[0] == _OBJECT_OPENER:
            children: dict[str, Raw] | list[Raw] = _OBJECT.decode(raw)
        elif view[0] == _ARRAY_OPENER:
            first = 1
            while first < len(view) and view[first] == _ARRAY_OPENER:
                first += 1
            if first < len(view) and view[first] in _NUMBER_STARTS:
                return False
            children = _ARRAY.decode(raw)
        else:
            return False
        # What the lines add: each repeats the path and its markup where the JSON had a key
        # and a comma (an index line a little more: the index).
        extra = len(children) * (len(path) + _LINE_MARKUP)
        # Members smaller than that (an object of flags, a list of words) stay together.
        if extra > len(raw) or extra > self.budget:
            return False
        self.budget -= extra
        if isinstance(children, dict):
            self.members(children, path, depth + 1)
        else:
            self.items(children, path, depth + 1)
        return True


def _text(key: str) -> str:
    """A key or top-level string on one line, without control characters."""
    if key.isprintable():
        return key
    if "\n" in key or "\r" in key:
        key = _LINE_BREAK.sub(" ", key)
    return key if key.isprintable() else clean_text(key)


def _scalar(value: Any) -> str:
    """A top-level member that gets no section: a scalar, an empty array or object."""
    kind = type(value)
    if kind is str:
        return _text(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is list or kind is dict:
        return "[]" if kind is list else "{}"
    return repr(value) if kind is float else str(value)
