"""Legacy Office 97-2003 binary files: Excel (.xls), Word (.doc) and PowerPoint (.ppt).

* ``.xls`` with xlrd: the same sections and tables as ``.xlsx`` (see ``excel``): one
  ``## <sheet name>`` section per sheet, hidden sheets marked, dates as ISO dates, booleans as
  TRUE/FALSE, error cells as Excel shows them (``#DIV/0!``).
* ``.doc`` with Debian's ``catdoc``: the text of the body, one paragraph per paragraph of the
  document. The binary format's styles are not read, so there are no headings or tables.
* ``.ppt`` with Debian's ``catppt``: the text of every slide, one paragraph per text line.

catdoc and catppt run as subprocesses of the bounded child (see ``tools``), with the child's
memory limit and a timeout. They print UTF-8 (``-d utf-8``); ``-w`` keeps a paragraph on one
line instead of wrapping it at 72 columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import xlrd

from .errors import ExtractionFailed
from .excel import sheet_section
from .markdown import clean_text, escape_text, join_blocks
from .result import Extraction
from .tools import run_tool

PASSWORD_PROTECTED = "This workbook is password-protected."
NO_CATDOC = "Reading legacy Word and PowerPoint files is not available on this server."


def extract_xls(data: bytes) -> Extraction:
    try:
        book = xlrd.open_workbook(file_contents=data, on_demand=True, ragged_rows=True)
    except xlrd.biffh.XLRDError as exc:
        if "encrypted" in str(exc).lower():
            raise ExtractionFailed(PASSWORD_PROTECTED) from None
        raise
    try:
        sections = []
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            sections.append(
                sheet_section(
                    sheet.name, hidden=sheet.visibility != 0, rows=_rows(sheet, book.datemode)
                )
            )
            book.unload_sheet(index)
    finally:
        book.release_resources()
    return Extraction(markdown=join_blocks(sections) + "\n", page_count=None, title=None)


def _rows(sheet: xlrd.sheet.Sheet, datemode: int) -> Iterator[list[object]]:
    for row_index in range(sheet.nrows):
        yield [_value(cell, datemode) for cell in sheet.row(row_index)]


def _value(cell: xlrd.sheet.Cell, datemode: int) -> object:
    if cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return None
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERROR")
    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            value: dt.datetime = xlrd.xldate.xldate_as_datetime(cell.value, datemode)
        except (xlrd.xldate.XLDateError, OverflowError, ValueError):
            return cell.value
        return value
    return cell.value


def extract_doc(data: bytes) -> Extraction:
    text = run_tool(["catdoc", "-w", "-d", "utf-8"], data=data, suffix=".doc", missing=NO_CATDOC)
    return Extraction(
        markdown=_paragraphs(text.decode("utf-8", "replace")), page_count=None, title=None
    )


def extract_ppt(data: bytes) -> Extraction:
    text = run_tool(["catppt", "-d", "utf-8"], data=data, suffix=".ppt", missing=NO_CATDOC)
    return Extraction(
        markdown=_paragraphs(text.decode("utf-8", "replace")), page_count=None, title=None
    )


def _paragraphs(text: str) -> str:
    # Form feeds separate pages or slides in catdoc's output; markdown has no use for them.
    lines = clean_text(text.replace("\f", "\n")).split("\n")
    paragraphs = [escape_text(" ".join(line.split())) for line in lines if line.strip()]
    return join_blocks(paragraphs) + "\n"
