"""Find simple tables on a PDF page from the positions of its text.

pypdf's text is right for prose but flattens tables into lines of words. While it extracts a
page, pypdf reports each piece of text with its position (``visitor_text``); from those we
rebuild lines, split each line into cells where the horizontal gap is wide, and call a table
a run of at least ``MIN_ROWS`` consecutive, evenly spaced lines of short cells (a label row
with one cell may sit inside the run). Cells are put in columns by where they start.

Only when a page has such a table is its text rebuilt from the positions (top to bottom);
otherwise pypdf's own text is kept. A page is left alone when it has long multi-cell lines
(two columns of prose, which is what turns other extractors' output into broken tables) or
right-to-left script, whose runs our line assembly would not order.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

from .markdown import clean_text, escape_text, join_blocks, markdown_table

MIN_ROWS = 3
MAX_CELL_CHARS = 40
_SAME_LINE = 2.0  # points
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


@dataclass
class Fragment:
    x: float
    y: float
    size: float
    text: str


@dataclass
class _Cell:
    x: float
    end: float
    text: str


@dataclass
class _Line:
    y: float
    cells: list[_Cell] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(cell.text for cell in self.cells)

    @property
    def is_row(self) -> bool:
        return len(self.cells) >= 2 and all(len(c.text) <= MAX_CELL_CHARS for c in self.cells)


class FragmentCollector:
    """A ``visitor_text`` callback for ``PageObject.extract_text``."""

    def __init__(self) -> None:
        self.fragments: list[Fragment] = []

    def __call__(
        self, text: str, cm: list[float], tm: list[float], font: object, size: float
    ) -> None:
        text = clean_text(text).replace("\n", " ")
        if not text.strip():
            return
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        scale = math.hypot(tm[0], tm[1]) * math.hypot(cm[0], cm[1]) or 1.0
        if all(math.isfinite(v) for v in (x, y, scale, size or 0.0)):
            self.fragments.append(Fragment(x, y, abs(size or 10.0) * scale, text))


def page_markdown_with_tables(fragments: list[Fragment]) -> str | None:
    """The page as text and markdown tables, or None when it has no table (or is unsafe)."""
    if not fragments or len(fragments) > 20_000:
        return None
    if any(_RTL.search(fragment.text) for fragment in fragments):
        return None
    lines = _lines(fragments)
    tables = _table_runs(lines)
    if not tables:
        return None
    in_table = {id(line) for run in tables for line in run}
    for line in lines:
        # Long multi-cell lines outside tables are columns of prose: keep pypdf's order.
        if id(line) not in in_table and len(line.cells) >= 2 and not line.is_row:
            return None

    blocks: list[str] = []
    text_lines: list[str] = []
    starts = {id(run[0]): run for run in tables}
    index = 0
    while index < len(lines):
        line = lines[index]
        run = starts.get(id(line))
        if run is None:
            text_lines.append(line.text)
            index += 1
            continue
        blocks.append(escape_text("\n".join(text_lines)))
        text_lines = []
        blocks.append(markdown_table(_grid(run)))
        index += len(run)
    blocks.append(escape_text("\n".join(text_lines)))
    return join_blocks(blocks)


def _lines(fragments: list[Fragment]) -> list[_Line]:
    ordered = sorted(fragments, key=lambda f: (-f.y, f.x))
    lines: list[_Line] = []
    pieces: list[list[Fragment]] = []
    for fragment in ordered:
        if pieces and abs(pieces[-1][0].y - fragment.y) <= _SAME_LINE:
            pieces[-1].append(fragment)
        else:
            pieces.append([fragment])
    for group in pieces:
        line = _Line(y=group[0].y)
        for fragment in sorted(group, key=lambda f: f.x):
            text = fragment.text.strip()
            # Text width is not reported; half the font size per character is close enough.
            end = fragment.x + len(fragment.text) * fragment.size * 0.5
            gap_allowed = fragment.size * 1.2
            if line.cells and fragment.x - line.cells[-1].end <= gap_allowed:
                cell = line.cells[-1]
                # Pieces of one word (kerning) touch; a new word starts with a space or a gap.
                spaced = fragment.text[:1].isspace() or fragment.x - cell.end > fragment.size * 0.2
                cell.text = f"{cell.text} {text}" if spaced else cell.text + text
                cell.end = max(cell.end, end)
            else:
                line.cells.append(_Cell(fragment.x, end, text))
        lines.append(line)
    return lines


def _table_runs(lines: list[_Line]) -> list[list[_Line]]:
    """Runs of evenly spaced row-like lines; one-cell label lines may sit between rows."""
    gaps = [a.y - b.y for a, b in zip(lines, lines[1:], strict=False) if a.y - b.y > 0]
    if not gaps:
        return []
    spacing = statistics.median(gaps)
    runs: list[list[_Line]] = []
    current: list[_Line] = []

    def close() -> None:
        while current and not current[-1].is_row:
            current.pop()
        if sum(1 for line in current if line.is_row) >= MIN_ROWS:
            runs.append(list(current))
        current.clear()

    for line in lines:
        if current and current[-1].y - line.y > spacing * 1.6:
            close()
        if line.is_row:
            current.append(line)
        elif current and len(line.cells) == 1 and len(line.text) <= MAX_CELL_CHARS:
            current.append(line)  # a label row inside a table ("Supplies")
        else:
            close()
    close()
    return runs


def _grid(run: list[_Line]) -> list[list[str]]:
    # Columns: clusters of cell start positions used by at least two rows.
    starts = sorted(cell.x for line in run for cell in line.cells)
    clusters: list[list[float]] = []
    for x in starts:
        if clusters and x - clusters[-1][-1] <= 8:
            clusters[-1].append(x)
        else:
            clusters.append([x])
    columns = [statistics.mean(c) for c in clusters if len(c) >= 2] or [statistics.mean(starts)]
    grid = []
    for line in run:
        row = [""] * len(columns)
        for cell in line.cells:
            # The column starting at or left of the cell: right-aligned numbers start late.
            column = max((i for i, x in enumerate(columns) if x <= cell.x + 4), default=0)
            row[column] = f"{row[column]} {cell.text}".strip()
        grid.append(row)
    return grid
