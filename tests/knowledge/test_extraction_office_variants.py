"""Office files as real tools write them beyond the common case: Strict Open XML, ZIP members
named with backslashes, one-column sheets, and the legacy 97-2003 binary formats (.xls written
by xlwt, .ppt assembled in xlwt's compound-file writer, the corpus's .doc read in place)."""

from __future__ import annotations

import datetime as dt
import io
import struct
import warnings
import zipfile
from collections.abc import Callable

import docx
import openpyxl
import pytest
import xlwt
from xlwt.CompoundDoc import XlsDoc

from apps.knowledge.extraction import (
    ExtractionFailed,
    UnsupportedType,
    detect_kind,
    extract,
    extract_bounded,
)
from apps.knowledge.extraction.errors import DAMAGED
from apps.knowledge.extraction.legacy import NO_CATDOC
from apps.knowledge.extraction.tools import TIMED_OUT, run_tool
from tests.corpus import CORPUS_DIR, SKIP_REASON

# Strict Open XML names (ISO/IEC 29500 Strict) of the Transitional ones openpyxl writes.
TO_STRICT = {
    b"http://schemas.openxmlformats.org/spreadsheetml/2006/main": (
        b"http://purl.oclc.org/ooxml/spreadsheetml/main"
    ),
    b"http://schemas.openxmlformats.org/officeDocument/2006/relationships": (
        b"http://purl.oclc.org/ooxml/officeDocument/relationships"
    ),
    b"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties": (
        b"http://purl.oclc.org/ooxml/officeDocument/extendedProperties"
    ),
    b"http://schemas.openxmlformats.org/drawingml/2006/main": (
        b"http://purl.oclc.org/ooxml/drawingml/main"
    ),
    b"http://schemas.openxmlformats.org/wordprocessingml/2006/main": (
        b"http://purl.oclc.org/ooxml/wordprocessingml/main"
    ),
}


def workbook(*sheets: tuple[str, list[list[object]]]) -> bytes:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets:
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def rewrite_zip(
    data: bytes,
    *,
    name: Callable[[str], str] = lambda name: name,
    content: Callable[[bytes], bytes] = lambda content: content,
) -> bytes:
    output = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as copy,
    ):
        for info in source.infolist():
            copy.writestr(name(info.filename), content(source.read(info)))
    return output.getvalue()


def to_strict(content: bytes) -> bytes:
    for transitional, strict in TO_STRICT.items():
        content = content.replace(transitional, strict)
    return content


SALES = [["Region", "Revenue"], ["Zone North", 1200], ["Zone South", 950]]


# --- Strict Open XML and backslash names -----------------------------------------------------


def test_strict_open_xml_workbook_is_read_like_a_transitional_one() -> None:
    strict = rewrite_zip(workbook(("Sales", SALES)), content=to_strict)
    # The fixture is really Strict: openpyxl alone finds no sheet in it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert openpyxl.load_workbook(io.BytesIO(strict)).sheetnames == []

    assert detect_kind(strict, file_name="sales.xlsx") == "xlsx"
    markdown = extract(strict, kind="xlsx").markdown
    assert "## Sales" in markdown
    assert "| Region | Revenue |" in markdown and "| Zone South | 950 |" in markdown


def test_strict_open_xml_word_document_is_read() -> None:
    document = docx.Document()
    document.add_paragraph("Strict conformance keeps this sentence.")
    buffer = io.BytesIO()
    document.save(buffer)
    strict = rewrite_zip(buffer.getvalue(), content=to_strict)
    assert detect_kind(strict) == "docx"
    assert "Strict conformance keeps this sentence." in extract(strict, kind="docx").markdown


def test_workbook_whose_members_are_named_with_backslashes_is_not_damaged() -> None:
    windows = rewrite_zip(workbook(("Sales", SALES)), name=lambda name: name.replace("/", "\\"))
    with zipfile.ZipFile(io.BytesIO(windows)) as archive:
        assert "xl\\workbook.xml" in archive.namelist()
    assert detect_kind(windows, file_name="sales.xlsx") == "xlsx"
    markdown = extract_bounded(windows, kind="xlsx").markdown
    assert "| Zone North | 1200 |" in markdown


# --- one-column sheets -----------------------------------------------------------------------


def test_single_column_sheet_is_a_table_with_its_header() -> None:
    data = workbook(("Names", [["Customer"], ["Ann Lee"], ["Bo Chen"], ["Cy Diaz"]]))
    markdown = extract(data, kind="xlsx").markdown
    assert "| Customer |\n|---|\n| Ann Lee |\n| Bo Chen |\n| Cy Diaz |" in markdown


def test_title_row_above_a_wider_table_and_a_lone_cell_stay_text() -> None:
    data = workbook(
        ("Report", [["Sales in CHF"], *SALES]),
        ("Note", [["Figures are unaudited."]]),
    )
    markdown = extract(data, kind="xlsx").markdown
    assert "## Report\n\nSales in CHF\n\n| Region | Revenue |" in markdown
    assert "## Note\n\nFigures are unaudited." in markdown
    assert "| Figures are unaudited. |" not in markdown


# --- legacy Excel (.xls) ---------------------------------------------------------------------


def legacy_workbook() -> bytes:
    book = xlwt.Workbook()
    orders = book.add_sheet("Orders")
    for column, header in enumerate(["Order", "Shipped", "Paid", "Amount"]):
        orders.write(0, column, header)
    date_style = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    orders.write(1, 0, "A-1001")
    orders.write(1, 1, dt.date(2024, 3, 1), date_style)
    orders.write(1, 2, True)
    orders.write(1, 3, 1250.5)
    orders.write(2, 0, "A-1002")
    orders.write(2, 1, dt.date(2024, 3, 9), date_style)
    orders.write(2, 2, False)
    orders.write(2, 3, 80)
    names = book.add_sheet("Lookup")
    for row, value in enumerate(["Code", "Zürich", "東京"]):
        names.write(row, 0, value)
    hidden = book.add_sheet("Raw")
    hidden.write(0, 0, "raw marker 7f3a")
    hidden.visibility = 1
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_legacy_excel_is_detected_by_its_bytes_and_read_as_tables() -> None:
    data = legacy_workbook()
    assert data.startswith(b"\xd0\xcf\x11\xe0")
    assert detect_kind(data, file_name="orders.xlsx") == "xls"
    markdown = extract_bounded(data, kind="xls").markdown
    assert "## Orders" in markdown
    assert "| Order | Shipped | Paid | Amount |" in markdown
    assert "| A-1001 | 2024-03-01 | TRUE | 1250.5 |" in markdown
    assert "| A-1002 | 2024-03-09 | FALSE | 80 |" in markdown
    assert "## Lookup\n\n| Code |\n|---|\n| Zürich |\n| 東京 |" in markdown
    assert "## Raw\n\n_This sheet is hidden in the workbook._\n\nraw marker 7f3a" in markdown


def test_truncated_legacy_excel_fails_as_damaged() -> None:
    data = legacy_workbook()
    with pytest.raises(ExtractionFailed) as failure:
        extract_bounded(data[: len(data) // 2] + bytes(len(data) // 2), kind="xls")
    assert str(failure.value) == DAMAGED


# --- legacy PowerPoint (.ppt) and Word (.doc) ------------------------------------------------


def _record(kind: int, payload: bytes, *, version: int = 0) -> bytes:
    return struct.pack("<HHI", version, kind, len(payload)) + payload


def legacy_presentation(texts: list[str]) -> bytes:
    """A PowerPoint 97 file: a 'PowerPoint Document' stream whose slide list holds text atoms.

    No tool on this machine writes .ppt, so xlwt's compound-file writer lays out the container
    (it names its one stream "Workbook"; the directory entry is renamed afterwards).
    """
    atoms = b"".join(_record(0x0FA0, text.encode("utf-16-le")) for text in texts)  # TextChars
    slide_list = _record(0x0FF0, atoms, version=0xF)  # SlideListWithText
    stream = _record(0x03E8, slide_list, version=0xF)  # Document
    buffer = io.BytesIO()
    XlsDoc().save(buffer, stream)
    data = bytearray(buffer.getvalue())
    old = "Workbook\x00".encode("utf-16-le")
    at = data.index(old + bytes(64 - len(old)))
    new = "PowerPoint Document\x00".encode("utf-16-le")
    data[at : at + 66] = new + bytes(64 - len(new)) + struct.pack("<H", len(new))
    return bytes(data)


def test_legacy_powerpoint_is_detected_and_its_text_read_in_the_bounded_child() -> None:
    data = legacy_presentation(["Quarterly review", "Выручка выросла на 12%", "Next steps"])
    assert detect_kind(data, file_name="deck.pptx") == "ppt"
    markdown = extract_bounded(data, kind="ppt").markdown
    assert markdown == "Quarterly review\n\nВыручка выросла на 12%\n\nNext steps\n"


def test_legacy_word_document_of_the_corpus_is_read() -> None:
    path = CORPUS_DIR / "bad" / "legacy-word97-doc-named-as.docx"
    if not path.is_file():
        pytest.skip(f"{SKIP_REASON}: {path}")
    data = path.read_bytes()
    assert detect_kind(data, file_name=path.name) == "doc"
    markdown = extract_bounded(data, kind="doc").markdown
    assert "These are a few of my favorite things:" in markdown
    assert "This is my first thought. This is my second thought." in markdown


def test_ole2_file_of_another_kind_is_still_refused() -> None:
    data = bytearray(legacy_workbook())
    old = "Workbook\x00".encode("utf-16-le")
    at = data.index(old)
    data[at : at + len(old)] = "Contents\x00\x00".encode("utf-16-le")[: len(old)]
    with pytest.raises(UnsupportedType) as refused:
        detect_kind(bytes(data), file_name="file.doc")
    assert refused.value.detected == "legacy Office (OLE2) file"


# --- external programs -----------------------------------------------------------------------


def test_external_program_that_hangs_is_stopped_by_its_timeout() -> None:
    with pytest.raises(ExtractionFailed) as failure:
        run_tool(
            ["sh", "-c", "sleep 30", "sh"], data=b"x", suffix=".txt", missing="-", timeout_s=0.5
        )
    assert str(failure.value) == TIMED_OUT


def test_missing_external_program_says_the_feature_is_unavailable() -> None:
    with pytest.raises(ExtractionFailed) as failure:
        run_tool(["no-such-program-here"], data=b"x", suffix=".doc", missing=NO_CATDOC)
    assert str(failure.value) == NO_CATDOC
