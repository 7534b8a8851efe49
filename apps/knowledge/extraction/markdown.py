"""Small markdown writers shared by every format: tables, escaping and text clean-up.

Extracted text is untrusted. We keep it readable (``a < b & c`` stays as written) but make
sure it cannot change the structure of the markdown we build around it:

* ``<`` that would open an HTML tag or comment (``<script>``, ``<!-- page 9 -->``) gets a
  backslash, so it shows as text even in a renderer that allows raw HTML;
* a text line that would read as a heading, a code fence or a setext underline gets a
  backslash, so headings (which the chunker relies on) come only from the document's structure;
* in table cells ``|`` becomes ``\\|`` and line breaks become spaces.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

# "<" followed by what would start a tag, a closing tag, a comment or a declaration.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
# Line starts that markdown would read as structure: ATX heading, code fence, setext underline.
_BLOCK_START = re.compile(r"^( {0,3})(#{1,6}(?=\s|$)|`{3,}|~{3,}|=+\s*$|-{2,}\s*$)")
# C0/C1 control characters other than tab and newline (PDFs are full of stray NULs).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Latin and Arabic presentation forms (ligatures such as U+FB01 "ﬁ", contextual Arabic letter
# shapes). NFKC maps them to the plain letters people search for; we do not NFKC the whole text
# because that would also rewrite full-width forms, superscripts and the like.
_PRESENTATION_FORMS = re.compile(r"[\ufb00-\ufdff\ufe70-\ufefe]+")


def clean_text(text: str) -> str:
    """Normalise newlines, drop control characters and undo presentation-form ligatures."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return _PRESENTATION_FORMS.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)


def escape_inline(text: str) -> str:
    """Neutralise raw HTML openers inside a run of text."""
    return _TAG_OPEN.sub(r"\\<", text)


def escape_block_starts(text: str) -> str:
    """Escape line starts that would read as headings, code fences or setext underlines."""
    return "\n".join(_BLOCK_START.sub(r"\1\\\2", line) for line in text.split("\n"))


def escape_text(text: str) -> str:
    """Escape a block of plain text (one or more lines) for use as a markdown paragraph."""
    return escape_block_starts(escape_inline(text))


def escape_cell(value: object) -> str:
    """One table cell on one line, with pipes escaped."""
    text = "" if value is None else str(value)
    text = " ".join(clean_text(text).split())
    return escape_inline(text).replace("|", r"\|")


# Joins a row's cells so the clean-up regexes run once per row, not once per cell (a CSV has
# tens of thousands of cells). A private-use character: never produced by the steps below.
_CELL_SEPARATOR = "\ue000"


def _escape_row(row: Sequence[object]) -> list[str]:
    values = ["" if value is None else str(value) for value in row]
    if not values:
        return []
    joined = _CELL_SEPARATOR.join(values)
    if joined.count(_CELL_SEPARATOR) != len(values) - 1:
        return [escape_cell(value) for value in values]  # a cell holds the separator itself
    escaped = escape_inline(clean_text(joined)).replace("|", r"\|")
    return [" ".join(cell.split()) for cell in escaped.split(_CELL_SEPARATOR)]


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """Render rows as a GitHub-style table; the first row is the header.

    Short rows are padded so every row has the same number of cells. Returns "" for no rows.
    """
    if not rows:
        return ""
    width = max(len(row) for row in rows) or 1
    lines = []
    for index, row in enumerate(rows):
        cells = _escape_row(row) + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


def markdown_list(items: Iterable[tuple[int, str, str]]) -> str:
    """Render (level, marker, text) items as one nested list; marker is "-" or "3.".

    Source levels may skip (a Word list that starts at level 3, a slide bullet at level 2
    under level 0); markdown must not, or the item turns into a code block. So nesting follows
    the order of levels seen, and each child is indented to its parent's text.
    """
    lines = []
    stack: list[tuple[int, int]] = []  # (source level, indentation of the item's text)
    for level, marker, text in items:
        while stack and stack[-1][0] >= level:
            stack.pop()
        indent = stack[-1][1] if stack else 0
        lines.append(" " * indent + f"{marker} {escape_inline(' '.join(text.split()))}")
        stack.append((level, indent + len(marker) + 1))
    return "\n".join(lines)


def trim_grid(rows: Iterable[Sequence[object]]) -> list[list[str]]:
    """Turn cell values into strings and drop empty rows and trailing empty columns."""
    grid = [["" if value is None else str(value).strip() for value in row] for row in rows]
    grid = [row for row in grid if any(row)]
    width = max(
        (max((i + 1 for i, v in enumerate(row) if v), default=0) for row in grid), default=0
    )
    return [row[:width] for row in grid]


def join_blocks(blocks: Iterable[str]) -> str:
    """Join markdown blocks with one blank line, skipping empty ones."""
    return "\n\n".join(block.strip("\n") for block in blocks if block and block.strip())
