"""Large JSON as an outline, written without turning the file into Python objects.

Parsing a 10 MB file into Python objects (orjson, the fastest at it) takes as long as the
whole text pass-through, before a line is written. This writer never does: msgspec, in C,
checks the syntax and rewrites the file as compact JSON (``format``), then splits it into its
top-level members and their items as ``Raw`` byte slices of that compact text, which are
joined into the markdown with one copy. Python touches one object per line written, not one
per value (``benchmarks/json_extraction.py``, figures in docs/performance.md).

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

Escapes: ``\\uXXXX`` escapes of visible characters and ``\\/`` are decoded (so "Zürich" that
``json.dumps`` wrote as ``Z\\u00fcrich`` is found as Zürich); escapes of quotes, backslashes and
control characters stay, so every line is still valid JSON. This runs in C codecs
(``raw_unicode_escape``) and only for files that have such escapes. A file escaped to ASCII
throughout (``json.dumps``'s default) whose escapes that codec reads as JSON does (no
``\\u0000``-``\\u009f``, which covers quote, backslash and controls, no presentation form or
``\\/``: one regex search; surrogate pairs, which it decodes half by half, are joined after)
keeps its escapes while the outline is written, and the outline is decoded once: three
passes fewer. Only values too long for a line are decoded first, to be split by their
decoded length. Any other file is decoded before, the escapes to keep hidden behind a NUL.

``render_outline`` returns None for what msgspec will not read: another encoding, a BOM, NaN,
lone surrogate escapes, floats past the double range at the top level, nesting deeper than
Python's recursion limit, bytes that are not UTF-8, and invalid JSON. The caller then takes
the slow path, which reads those or says where the error is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
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
_OBJECT_OPENER, _ARRAY_OPENER = ord("{"), ord("[")
_NUMBER_STARTS = frozenset(b"-0123456789")
# Paths deeper than this are no longer read (and Python's recursion stays far from its limit).
_MAX_DEPTH = 16
_ENCODE = msgspec.json.encode

# What clean_text rewrites, as it can appear in compact UTF-8 JSON: C1 controls (C2 80-9F)
# and presentation forms (EF AC-BB); C0 controls cannot appear raw in valid JSON. Two
# patterns that each start with a literal byte are searched at memchr speed, one
# alternation is not (60 ms on 10 MB).
_CLEANABLE_UTF8 = (
    (b"\xc2", re.compile(rb"\xc2[\x80-\x9f]")),
    (b"\xef", re.compile(rb"\xef[\xac-\xbb]")),
)
# The backslash of an escape that stays escaped, so lines stay valid JSON and no control
# character appears: quote, backslash, C0 and C1 controls. Only the backslash is matched, so
# the replacement is a literal: no Python call per match.
_KEPT_ESCAPE_BACKSLASH = re.compile(rb"\\(?=u00(?:[01][0-9a-fA-F]|22|5[cC]|7[fF]|[89][0-9a-fA-F]))")
# Escapes that raw_unicode_escape alone would not read as JSON does, and those whose
# characters the outline treats apart: escaped ASCII and C1 controls (quote, backslash,
# controls, "<"), surrogates (the two halves of one character) and presentation forms
# (clean_text); and ``\/``, looked for apart (only if there is a "/": memchr). Without
# them (surrogates aside: joined after), raw_unicode_escape can decode the finished outline. "\u" as the literal prefix:
# 12 ms on the benchmark's tree, where "\" then an alternation took 17.
_SPECIAL_ESCAPE = re.compile(rb"\\u(?:00[0-9]|[dD][89abAB]|[fF][b-eB-E])")
# The same but surrogates, which the outline written with escapes can join (emoji are
# common): looked for after a surrogate, so the file is still read once.
_SPECIAL_ESCAPE_BUT_SURROGATES = re.compile(rb"\\u(?:00[0-9]|[fF][b-eB-E])")
_ESCAPED_SOLIDUS = b"\\/"
# An escape that must stay escaped (parity not read: a false hit only costs time).
_KEPT_ESCAPE = re.compile(rb"\\u00[0-9]")
_DECODABLE_ESCAPE = re.compile(rb"\\[u/]")
_LINE_BREAK = re.compile(r"\s*[\r\n]\s*")
# Stands for a kept escape's backslash while the others are decoded. NUL cannot appear raw
# in valid JSON.
_PLACEHOLDER = b"\x00"
_NEWLINE = b"\n"


def render_outline(data: bytes) -> str | None:
    """The outline of a JSON document (module docstring), ending with a newline unless
    empty; None when msgspec cannot read it."""
    try:
        compact = msgspec.json.format(data, indent=-1)
        # Splitting spends at most the whitespace that compacting saved (not what decoding
        # escapes saves: a file escaped to ASCII gets the outline of the file unescaped).
        # What the outline adds besides (``- **key**: `` where the JSON had ``"key":``) can
        # still make a minified file's outline bigger; then it is written again without
        # splits, and if need be with members as they were, ``"key":<JSON>``, which is
        # never bigger.
        budget = len(data) - len(compact)
        # A one-byte test first: memchr, where a two-byte one takes 8 ms on 10 MB.
        if b"\\" in compact and _DECODABLE_ESCAPE.search(compact):
            special = _SPECIAL_ESCAPE.search(compact)
            surrogates = False
            if special is not None and special[0][2] in b"dD":
                surrogates = True
                special = _SPECIAL_ESCAPE_BUT_SURROGATES.search(compact, special.end())
            solidus = b"/" in compact and _ESCAPED_SOLIDUS in compact
            if special is None and not solidus and compact.isascii():
                text = _escaped_outline(data, compact, budget, surrogates=surrogates)
                if text is not None:
                    return text
            # Surrogates and presentation forms need no hiding: look further for the rest
            # (surrogates have been looked past already).
            protect = solidus or (
                special is not None
                and (
                    special[0].startswith(b"\\u00")
                    or _KEPT_ESCAPE.search(compact, special.end()) is not None
                )
            )
            compact = _decode_escapes(compact, protect=protect)
        value = _TOP.decode(compact)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    markdown = _Outline(budget).document(value)
    if len(markdown) > len(data) and budget:
        markdown = _Outline(0).document(value)
    if len(markdown) > len(data):
        markdown = _Outline(0, quoted=True).document(value)
    try:
        text = markdown.decode()
    except UnicodeDecodeError:  # msgspec passes string bytes through unchecked
        return None
    if any(lead in compact and pattern.search(compact) for lead, pattern in _CLEANABLE_UTF8):
        text = clean_text(text)
    if b"<" in compact:
        text = escape_inline(text)
    return text


def _escaped_outline(data: bytes, compact: bytes, budget: int, *, surrogates: bool) -> str | None:
    r"""The outline of ASCII JSON whose escapes raw_unicode_escape reads as JSON does (no
    special escapes), written from the compact JSON as it is and decoded once, at the end.

    Decoding the escapes first, then encoding the text for msgspec and decoding the outline
    took three passes more. Only a value too long for a line is decoded first, to be split
    by its decoded length as it would be unescaped. None when the outline is bigger than the
    input: the caller writes the smaller ones. ``surrogates``: the JSON has surrogate pairs,
    which the codec decodes one half at a time, so they are joined after.
    """
    value = _TOP.decode(compact)
    outline = _Outline(budget, escaped=True, surrogates=surrogates)
    unescape = _unescape_with_surrogates if surrogates else _unescape
    outline.write(value)
    out = outline.out
    # Runs of escaped pieces between the pieces of split values, which are decoded already.
    escaped_runs: list[bytes] = []
    decoded_runs: list[list[bytes]] = []
    position = 0
    for start, end in outline.decoded_spans:
        escaped_runs.append(b"".join(out[position:start]))
        decoded_runs.append(out[start:end])
        position = end
    escaped_runs.append(b"".join(out[position:]))
    # Decoding only shortens: within the input's size escaped, within it decoded.
    escaped_size = sum(map(len, escaped_runs))
    if escaped_size + outline.decoded_size > len(data):
        return None
    if not decoded_runs:
        text = unescape(escaped_runs[0])
    elif escaped_size * 4 < outline.decoded_size:
        # Mostly split values (a deep file): the few escaped runs are made UTF-8, and the
        # whole decoded once, rather than the text copied once more to join its runs.
        pieces = [unescape(escaped_runs[0]).encode()]
        for decoded, escaped in zip(decoded_runs, escaped_runs[1:], strict=True):
            pieces += decoded
            pieces.append(unescape(escaped).encode())
        text = b"".join(pieces).decode()
    else:
        parts = [unescape(escaped_runs[0])]
        for decoded, escaped in zip(decoded_runs, escaped_runs[1:], strict=True):
            parts += (b"".join(decoded).decode(), unescape(escaped))
        text = "".join(parts)
    # Nothing to clean: the bytes are ASCII, and C1 controls and presentation forms would be
    # special escapes.
    if b"<" in compact:
        text = escape_inline(text)
    return text


def _unescape(escaped: Any) -> str:
    """Escaped text (bytes or Raw) decoded by raw_unicode_escape."""
    return str(escaped, "raw_unicode_escape")


def _unescape_with_surrogates(escaped: Any) -> str:
    """``_unescape``, surrogate pairs joined into their characters."""
    return str(escaped, "raw_unicode_escape").encode("utf-16", "surrogatepass").decode("utf-16")


def _decode_escapes(compact: bytes, *, protect: bool) -> bytes:
    r"""``\uXXXX`` escapes of visible characters and ``\/`` decoded, the rest kept.

    ``raw_unicode_escape`` decodes every ``\uXXXX`` preceded by an odd number of backslashes
    and reads other bytes as Latin-1. With ``protect`` (the file may have escapes to keep,
    or ``\/``), the escapes to keep are first hidden behind a NUL.
    """
    if protect:
        if b"/" in compact:
            # "\/" is replaced by "/", so escaped backslashes are hidden first: JSON escapes
            # read left to right, and so does replace, so each pair it replaces is one.
            compact = compact.replace(b"\\\\", _PLACEHOLDER * 2).replace(_ESCAPED_SOLIDUS, b"/")
        # A backslash hidden here stands for itself again at the end, so one that was the
        # second of an escaped backslash ("\\u0007": a backslash, then "u0007") comes back
        # as it was: the escapes need no pairing.
        compact = _KEPT_ESCAPE_BACKSLASH.sub(_PLACEHOLDER, compact)
    if compact.isascii():
        text = compact.decode("raw_unicode_escape")
    else:
        # Characters past Latin-1 become \uXXXX escapes and are decoded back; a backslash of
        # valid JSON is never followed by one, so no escape is made or unmade by this.
        text = compact.decode().encode("raw_unicode_escape").decode("raw_unicode_escape")
    try:
        decoded = text.encode()
    except UnicodeEncodeError:
        # Surrogate pairs are decoded one half at a time: join them. (msgspec has refused
        # lone halves already.)
        decoded = text.encode("utf-16", "surrogatepass").decode("utf-16").encode()
    return decoded.replace(_PLACEHOLDER, b"\\") if protect else decoded


def _raw_escaped(text: str) -> bytes:
    """Text for an outline that raw_unicode_escape decodes as a whole: back to ``text``.

    Its backslashes are written as ``\\U0000005c``, an escape JSON never holds, so none can
    start an escape with what follows.
    """
    if "\\" in text:
        text = text.replace("\\", "\\U0000005c")
    return text.encode("raw_unicode_escape")


class _Outline:
    """Collects the outline as pieces of bytes (Raw slices of the compact JSON and the markup
    around them) joined once at the end: each byte of the values is copied once.

    ``budget`` is the bytes that splitting long lines may still add. ``escaped``: the JSON
    still has its escapes (``surrogates``: pairs of them among them), the outline is decoded
    afterwards (``_escaped_outline``); its own text is written for that, and a value too long
    for a line is decoded and, if it is still too long, split into lines that are decoded
    already, in one piece per value: ``out[start:end]`` for each ``(start, end)`` of
    ``decoded_spans``, ``decoded_size`` bytes in all.
    """

    def __init__(
        self, budget: int, *, quoted: bool = False, escaped: bool = False, surrogates: bool = False
    ) -> None:
        self.budget = budget
        self.quoted = quoted
        self.escaped = escaped
        self.unescape: Callable[[Any], str] = _unescape_with_surrogates if surrogates else _unescape
        self.encode: Callable[[str], bytes] = _raw_escaped if escaped else str.encode
        self.decoded_spans: list[tuple[int, int]] = []
        self.decoded_size = 0
        self.out: list[Any] = []

    def document(self, value: Any) -> bytes:
        self.write(value)
        # Every line ends with a newline, the last one too: the text is returned as it is,
        # without another copy to add or strip one.
        return b"".join(self.out)

    def write(self, value: Any) -> None:
        out, encode = self.out, self.encode
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
                        out.append(encode(f"- **{_text(key)}**: {_scalar(member)}\n"))
                    continue
                if out:
                    out.append(_NEWLINE)
                heading = " ".join(_text(key).split()) or "(empty key)"
                out.append(encode(f"## {heading}\n\n"))
                if kind is list:
                    self.items(member, "")
                else:
                    self.members(member, "")
                after_block = True
        elif type(value) is list:
            self.items(value, "")
        else:
            scalar = escape_block_starts(_scalar(value))
            out.append(encode(f"{scalar}\n") if scalar else b"")

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
                    out += (self.encode(f"- **{item_path}**: "), item, _NEWLINE)
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
        out, encode = self.out, self.encode
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
                out += (encode(head + key + "**: "), member, _NEWLINE)
            return
        for key, member in pairs:
            if len(member) <= LINE_LIMIT or not self.split(
                member, f"{path}.{key}" if path else key, depth
            ):
                out += (encode(head + key + "**: "), member, _NEWLINE)

    def split(self, raw: Raw, path: str, depth: int = 0) -> bool:
        """Write a long object's or array's members as lines of their own when that is worth
        its cost in bytes (the paths) and the budget allows it.

        Reading the members reads the value once more, so numbers are not taken apart: an
        array whose first item is a number, or an array of arrays starting with one
        (coordinates, a matrix, a vector), stays one line. So does anything deeper than
        ``_MAX_DEPTH`` levels.
        """
        if self.escaped:
            return self.split_decoded(raw, path, depth)
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

    def split_decoded(self, raw: Raw, path: str, depth: int) -> bool:
        """``split`` for a value of escaped JSON: it decides on the decoded value, as the
        unescaped file does, and writes its lines decoded."""
        decoded = Raw(self.unescape(raw).encode())
        if len(decoded) <= LINE_LIMIT:
            return False
        plain = _Outline(self.budget)
        if not plain.split(decoded, path, depth):
            return False
        self.budget = plain.budget
        # Its lines are joined now, while they are in the cache, into one piece: the end
        # joins a piece per value, not per line (the tree: 850 for 16,000).
        lines = b"".join(plain.out)
        self.decoded_size += len(lines)
        out, spans = self.out, self.decoded_spans
        start = len(out)
        out.append(lines)
        if spans and spans[-1][1] == start:  # one run with the previous pieces
            start = spans.pop()[0]
        spans.append((start, len(out)))
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
