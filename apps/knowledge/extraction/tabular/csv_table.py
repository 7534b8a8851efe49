"""CSV: the text decoded, the delimiter sniffed, one markdown table capped at ``MAX_ROWS`` rows
and ``MAX_COLUMNS`` columns (the cap JSON tables share)."""

from __future__ import annotations

import csv
import io

from ..errors import ExtractionFailed
from ..markdown import join_blocks, markdown_table
from ..result import Extraction
from ..text import decode_or_fail

MAX_ROWS = 2_000
MAX_COLUMNS = 100


_DELIMITERS = (",", ";", "\t", "|")
_SNIFF_CHARS = 64 * 1024


# Fields can hold whole documents; the csv module's default limit is 128 KiB.
csv.field_size_limit(16 * 1024 * 1024)


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
