"""CSV and JSON, one module each: `csv_table` (CSV), `json_reading` (a JSON file read and laid
out in sections or as an outline) and `json_blocks` (JSON values as tables and lists).

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

Callers import from `apps.knowledge.extraction.tabular`; the names below are its public face.
"""

from .csv_table import MAX_COLUMNS, MAX_ROWS, extract_csv, sniff_delimiter
from .json_reading import OUTLINE_FROM_BYTES, extract_json, render_json, render_json_outline

__all__ = [
    "MAX_COLUMNS",
    "MAX_ROWS",
    "OUTLINE_FROM_BYTES",
    "extract_csv",
    "extract_json",
    "render_json",
    "render_json_outline",
    "sniff_delimiter",
]
