"""Excel (.xlsx) with openpyxl in read-only mode, reading cached formula values.

Every sheet becomes a ``## <sheet name>`` section, in workbook order, holding one markdown
table of its used range (empty rows and empty edge columns dropped; the first row is the
header). In a sheet of several columns, rows above the table with a single filled cell (sheet
titles, units such as "In millions of CHF") are written as lines of text before it; a sheet of
a single column is a one-column table (a list of names is still a table with a header), and a
sheet of one cell is a line of text.

* Formulas show the value Excel last saved (``data_only=True``); a workbook written by a
  library that never calculated them shows empty cells there.
* A merged range shows its value in its top-left cell; the cells it covers are empty (this is
  how the file stores them, and what read-only mode returns).
* Hidden and very hidden sheets are included, marked as hidden: their cells are part of the
  document and are often what people search for (lookup tables, raw data behind a chart).
* Chart sheets have no cells; they get a section that says so.
* A sheet is capped at ``MAX_ROWS`` rows and ``MAX_COLUMNS`` columns; the section says when
  it was cut.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterable, Sequence

import openpyxl
from openpyxl.worksheet._read_only import ReadOnlyWorksheet

from .markdown import escape_inline, escape_text, join_blocks, markdown_table, trim_grid
from .ooxml import check_package
from .result import Extraction

MAX_ROWS = 2_000
MAX_COLUMNS = 50


def extract_xlsx(data: bytes) -> Extraction:
    data = check_package(data)
    workbook = openpyxl.load_workbook(
        io.BytesIO(data), read_only=True, data_only=True, keep_links=False
    )
    try:
        chartsheets = {sheet.title for sheet in workbook.chartsheets}
        sections = []
        for name in workbook.sheetnames:
            if name in chartsheets:
                sections.append(f"## {_heading(name)}\n\n_Chart sheet: it has no cells._")
                continue
            sections.append(_sheet_markdown(workbook[name]))
        title = (workbook.properties.title or "").strip() or None
    finally:
        workbook.close()
    return Extraction(markdown=join_blocks(sections) + "\n", page_count=None, title=title)


def _heading(name: str) -> str:
    return escape_inline(" ".join(name.split())) or "Sheet"


def _sheet_markdown(sheet: ReadOnlyWorksheet) -> str:
    # The stored dimension can be wrong (some writers always say A1); read the real rows.
    sheet.reset_dimensions()
    return sheet_section(
        sheet.title,
        hidden=sheet.sheet_state != "visible",
        rows=sheet.iter_rows(values_only=True),
    )


def sheet_section(name: str, *, hidden: bool, rows: Iterable[Sequence[object]]) -> str:
    """The ``## name`` section of one sheet from its rows of cell values (also used for .xls)."""
    heading = f"## {_heading(name)}"
    notes = []
    if hidden:
        notes.append("_This sheet is hidden in the workbook._")
    grid_rows: list[Sequence[object]] = []
    cut_rows = cut_columns = False
    for row in rows:
        if len(grid_rows) == MAX_ROWS:
            cut_rows = True
            break
        if len(row) > MAX_COLUMNS and any(value is not None for value in row[MAX_COLUMNS:]):
            cut_columns = True
        grid_rows.append([format_cell(value) for value in row[:MAX_COLUMNS]])

    grid = _trim_leading_columns(trim_grid(grid_rows))
    text_lines = []
    # Title rows above a wider table (one filled cell) are text, and so is a lone cell; the
    # rows of a single column are the table itself.
    single_column = all(len(row) == 1 for row in grid)
    while (
        grid and sum(1 for value in grid[0] if value) == 1 and (not single_column or len(grid) == 1)
    ):
        text_lines.append(next(value for value in grid[0] if value))
        grid.pop(0)
    if cut_rows:
        notes.append(f"_Only the first {MAX_ROWS:,} rows of this sheet are shown._")
    if cut_columns:
        notes.append(f"_Only the first {MAX_COLUMNS} columns of this sheet are shown._")
    if not grid and not text_lines:
        notes.append("_This sheet is empty._")
    body = [escape_text("\n".join(" ".join(line.split()) for line in text_lines))]
    return join_blocks([heading, *notes, *body, markdown_table(grid)])


def _trim_leading_columns(grid: list[list[str]]) -> list[list[str]]:
    if not grid:
        return grid
    first = min(next((i for i, value in enumerate(row) if value), len(row)) for row in grid)
    return [row[first:] for row in grid]


def format_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        # Excel shows at most 15 significant digits; so do we (no 0.30000000000000004).
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
