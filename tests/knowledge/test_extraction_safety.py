"""Extraction on files these tests make at run time, so it is tested without the corpus.

python-docx, openpyxl and python-pptx write real files; PDFs are built by hand; hostile files
(a decompression bomb, billion laughs, an encrypted PDF) are built with zipfile and pypdf.
"""

from __future__ import annotations

import io
import multiprocessing
import re
import struct
import time
import zipfile
import zlib
from random import Random

import docx
import openpyxl
import pytest
from docx.oxml.parser import parse_xml
from lxml import etree
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches
from pypdf import PdfReader, PdfWriter

from apps.knowledge.extraction import (
    SUPPORTED_KINDS,
    Extraction,
    ExtractionFailed,
    UnsupportedType,
    detect_kind,
    extract,
    extract_bounded,
)

# --- builders ------------------------------------------------------------------------------


def make_pdf(pages: list[str], *, image_only: bool = False) -> bytes:
    """A small valid PDF: one page per string (lines in Helvetica), or one image per page."""
    # Byte 0x80 is mapped to the "fi" ligature glyph, so a test can write "ﬁ".
    objects: dict[int, bytes] = {
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding"
        b" << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [128 /fi] >> >>"
    }
    objects[4] = (
        b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray"
        b" /BitsPerComponent 8 /Length 1 >>\nstream\n\x80\nendstream"
    )
    kids = []
    for index, text in enumerate(pages):
        page_id, content_id = 5 + 2 * index, 6 + 2 * index
        kids.append(f"{page_id} 0 R")
        if image_only:
            stream = b"q 200 0 0 200 100 400 cm /Im1 Do Q"
        else:
            lines = []
            for line in text.split("\n"):
                escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
                escaped = escaped.replace("\ufb01", "\x80")
                lines.append(f"({escaped}) Tj 0 -16 Td")
            stream = ("BT /F1 12 Tf 72 720 Td " + " ".join(lines) + " ET").encode("latin-1")
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources"
            b" << /Font << /F1 3 0 R >> /XObject << /Im1 4 0 R >> >>"
            + f" /Contents {content_id} 0 R >>".encode()
        )
        objects[content_id] = (
            f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
        )
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>".encode()

    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    for number in range(1, size):
        out += f"{offsets[number]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def encrypt_pdf(data: bytes, *, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def tiny_png() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + chunk(b"IEND", b"")
    )


def save(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def make_docx() -> bytes:
    document = docx.Document()
    document.core_properties.title = ""
    document.add_paragraph("Quarterly Report", style="Title")
    document.add_heading("Revenue", level=1)
    document.add_paragraph("Revenue grew in every region.")
    document.add_paragraph("First point", style="List Bullet")
    document.add_paragraph("Second point", style="List Bullet")
    document.add_paragraph("Step one", style="List Number")
    document.add_paragraph("Step two", style="List Number")
    document.add_heading("Details", level=2)
    document.add_paragraph("# not a heading, just text")
    table = document.add_table(rows=3, cols=3)
    table.cell(0, 0).text, table.cell(0, 1).text, table.cell(0, 2).text = "Name", "Value", "Note"
    table.cell(1, 0).text, table.cell(1, 1).text = "a|b", "<script>alert(1)</script>"
    table.cell(1, 2).text = "x < y & z > w"
    merged = table.cell(2, 0).merge(table.cell(2, 1))
    merged.text = "merged across two"
    table.cell(2, 2).text = "last"
    section = document.sections[0]
    section.different_first_page_header_footer = True
    section.header.paragraphs[0].text = "Default header text"
    section.first_page_header.paragraphs[0].text = "First page header text"
    section.footer.paragraphs[0].text = "Default footer text"
    footer_table = section.footer.add_table(rows=1, cols=2, width=Inches(4))
    footer_table.cell(0, 0).text, footer_table.cell(0, 1).text = "footer cell", "two"
    return save(document)


def make_xlsx(*, rows: int = 5) -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Sales"
    sheet.append(["Quarterly sales"])
    sheet.append(["Region", "Q1", "Q2", "Total"])
    for index in range(rows):
        sheet.append([f"Region {index}", index, 0.1 + 0.2, f"=B{index + 3}+C{index + 3}"])
    sheet.merge_cells("F1:G2")
    sheet["F1"] = "Merged note"
    hidden = workbook.create_sheet("Lookup")
    hidden.append(["code", "label"])
    hidden.append(["X1", "Secret lookup value"])
    hidden.sheet_state = "hidden"
    workbook.create_sheet("Empty")
    return save(workbook)


def make_pptx() -> bytes:
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Launch Plan"
    body = slide.placeholders[1].text_frame
    body.text = "Top level bullet"
    for level, text in ((1, "Second level"), (2, "Third level"), (0, "Back to top")):
        paragraph = body.add_paragraph()
        paragraph.text, paragraph.level = text, level
    slide.notes_slide.notes_text_frame.text = "Speaker notes mention the budget"

    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Numbers"
    table = slide.shapes.add_table(3, 2, Inches(0.5), Inches(1.5), Inches(4), Inches(1.5)).table
    for row, values in enumerate((("Fruit", "Count"), ("Apple", "3"), ("Pear|Plum", "5"))):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    chart_data = CategoryChartData()
    chart_data.categories = ["North", "South"]
    chart_data.add_series("Units", (12.5, 30))
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(5), Inches(1.5), Inches(4), Inches(3), chart_data
    ).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Units by region"

    slide = presentation.slides.add_slide(presentation.slide_layouts[6])
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    inner.text_frame.text = "Text inside a group"
    picture = slide.shapes.add_picture(io.BytesIO(tiny_png()), Inches(1), Inches(3))
    picture._element.nvPicPr.cNvPr.set("descr", "A diagram of the rollout")
    return save(presentation)


def make_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def replace_member(package: bytes, name: str, data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(package)) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    members[name] = data
    return make_zip(members)


def zip_bomb(*, megabytes: int) -> bytes:
    """A .docx-shaped ZIP whose word/document.xml is a long run of zeros."""
    buffer = io.BytesIO()
    block = b"\x00" * (1024 * 1024)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            for _ in range(megabytes):
                member.write(block)
    return buffer.getvalue()


BILLION_LAUGHS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'.encode()
        for i in range(1, 10)
    )
    + b"]>"
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    b"<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
)


def collapse(text: str) -> str:
    return " ".join(text.split())


# --- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "detected"),
    [
        (b"", "empty file"),
        (b"  \n\t ", "empty file"),
        (tiny_png(), "PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(100), "JPEG image"),
        (b"GIF89a\x01\x00\x01\x00\x00\x00\x00" + bytes(30), "GIF image"),
        (make_zip({"notes.txt": b"hello"}), "ZIP archive"),
        # OLE2 magic and a stream name, but no compound-file directory to read it from.
        (
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500) + "WordDocument".encode("utf-16-le"),
            "damaged legacy Office (OLE2) file",
        ),
        (Random(7).randbytes(4096), "binary data of an unknown type"),
        (b"PK\x03\x04 this is not really a zip", "damaged ZIP archive"),
    ],
    # Named by what they are: the generated bytes (zip timestamps) differ between processes,
    # and xdist needs every process to collect the same test ids.
    ids=lambda value: value if isinstance(value, str) else "data",
)
def test_detect_kind_refuses_what_we_do_not_extract(data: bytes, detected: str) -> None:
    with pytest.raises(UnsupportedType) as refused:
        detect_kind(data, file_name="looks-fine.pdf")
    assert refused.value.detected == detected


def test_detect_kind_reads_office_files_from_their_parts_not_their_names() -> None:
    assert detect_kind(make_docx(), file_name="report.xlsx") == "docx"
    assert detect_kind(make_xlsx(), file_name="report.pptx") == "xlsx"
    assert detect_kind(make_pptx(), file_name=None) == "pptx"
    assert detect_kind(make_pdf(["x"]), file_name="scan.png") == "pdf"


@pytest.mark.parametrize(
    ("data", "name", "kind"),
    [
        (b"# Title\n\ntext", "notes.md", "markdown"),
        (b"a,b\n1,2\n", "table.csv", "csv"),
        (b'{"a": 1}', "data.json", "json"),
        (b"<p>hi</p>", "page.htm", "html"),
        (b'{"a": [1, 2]}', "data.txt", "json"),
        (b"<!DOCTYPE html><html><body>x</body></html>", None, "html"),
        (b"{not json", None, "text"),
        (b"plain words", None, "text"),
        ("été au café".encode("utf-16"), None, "text"),
        ("名前,年齢\n佐藤太郎,30\n".encode("cp932"), "people.csv", "csv"),
    ],
)
def test_detect_kind_uses_the_name_only_among_text_kinds(
    data: bytes, name: str | None, kind: str
) -> None:
    assert detect_kind(data, file_name=name) == kind
    assert kind in SUPPORTED_KINDS


# --- formats -------------------------------------------------------------------------------


def test_docx_headings_lists_tables_headers_and_footers() -> None:
    markdown = extract(make_docx(), kind="docx").markdown
    assert "# Quarterly Report" in markdown.split("\n")
    assert "## Revenue" in markdown.split("\n")
    assert "### Details" in markdown.split("\n")
    assert "- First point\n- Second point" in markdown
    assert "1. Step one\n2. Step two" in markdown
    # Text that only looks like a heading stays text.
    assert "\\# not a heading, just text" in markdown
    for text in ("First page header text", "Default header text", "Default footer text"):
        assert text in markdown
    assert "| footer cell | two |" in markdown


def test_docx_table_cells_cannot_break_the_table_or_inject_html() -> None:
    markdown = extract(make_docx(), kind="docx").markdown
    rows = [line for line in markdown.split("\n") if line.startswith("| a")]
    assert rows == ["| a\\|b | \\<script>alert(1)\\</script> | x < y & z > w |"]
    assert not re.search(r"(?<!\\)<script", markdown)
    # A merged cell: its text once, the covered cell empty.
    assert "| merged across two |  | last |" in markdown


def test_xlsx_sheets_hidden_sheets_merged_cells_and_cached_values() -> None:
    result = extract(make_xlsx(), kind="xlsx")
    markdown = result.markdown
    assert "## Sales" in markdown and "## Lookup" in markdown and "## Empty" in markdown
    assert "Quarterly sales" in markdown
    assert "| Region | Q1 | Q2 | Total |" in markdown
    # 0.1 + 0.2 shown as Excel shows it; formulas never calculated show no value, not "=B3+C3".
    assert "| Region 1 | 1 | 0.3 |" in markdown
    assert "=B" not in markdown
    assert "Secret lookup value" in markdown
    assert "_This sheet is hidden in the workbook._" in markdown
    assert "_This sheet is empty._" in markdown
    assert "Merged note" in markdown


def test_xlsx_huge_sheet_is_capped_and_says_so() -> None:
    markdown = extract(make_xlsx(rows=2_100), kind="xlsx").markdown
    assert "Only the first 2,000 rows of this sheet are shown." in markdown
    assert "Region 1990" in markdown
    assert "Region 2050" not in markdown


def test_xlsx_with_cells_far_apart_is_read_without_building_the_whole_grid() -> None:
    # A1 and XFD1048576: a dense reader would allocate 17 billion cells (python-calamine
    # aborts the interpreter on this 6 KB file, which is why we read with openpyxl).
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "start"
    workbook.active["XFD1048576"] = "end"
    started = time.monotonic()
    markdown = extract(save(workbook), kind="xlsx").markdown
    assert "start" in markdown and "Only the first 2,000 rows" in markdown
    assert time.monotonic() - started < 10


def test_pptx_slides_bullets_tables_charts_groups_pictures_and_notes() -> None:
    result = extract(make_pptx(), kind="pptx")
    markdown = result.markdown
    assert result.page_count == 3
    assert result.title == "Launch Plan"
    assert "## Slide 1: Launch Plan" in markdown
    assert "- Top level bullet\n  - Second level\n    - Third level\n- Back to top" in markdown
    assert "### Notes\n\nSpeaker notes mention the budget" in markdown
    assert "## Slide 2: Numbers" in markdown
    assert "| Pear\\|Plum | 5 |" in markdown
    assert "Chart: Units by region" in markdown
    assert "| North | 12.5 |" in markdown and "| South | 30 |" in markdown
    assert "## Slide 3" in markdown
    assert "Text inside a group" in markdown
    assert "[Image: A diagram of the rollout]" in markdown


def test_pdf_pages_are_marked_and_text_is_kept() -> None:
    pdf = make_pdf(["Hello from page one\nSecond line", "Finding ﬁsh on page two"])
    result = extract(pdf, kind="pdf")
    assert result.page_count == 2
    assert "## Page 1\n\nHello from page one\nSecond line" in result.markdown
    # The "ﬁ" ligature is normalised so "fish" is found.
    assert "## Page 2\n\nFinding fish on page two" in result.markdown


def test_pdf_with_only_images_fails_as_scanned() -> None:
    with pytest.raises(ExtractionFailed, match="no extractable text"):
        extract(make_pdf(["", ""], image_only=True), kind="pdf")


def test_pdf_with_a_user_password_fails_saying_so() -> None:
    locked = encrypt_pdf(make_pdf(["Confidential plan"]), user_password="secret")
    with pytest.raises(ExtractionFailed, match="password-protected"):
        extract(locked, kind="pdf")


def test_pdf_with_an_empty_user_password_opens() -> None:
    restricted = encrypt_pdf(make_pdf(["Copying is restricted"]), user_password="")
    assert "Copying is restricted" in extract(restricted, kind="pdf").markdown


def test_csv_sniffs_semicolons_and_decodes_shift_jis() -> None:
    markdown = extract(b"name;note\nAnn;likes tea, coffee\nBob;x\n", kind="csv").markdown
    assert "| Ann | likes tea, coffee |" in markdown
    kanji = "名前,住所\n佐藤太郎,東京\n三木英子,名古屋\n".encode("cp932")
    assert "| 三木英子 | 名古屋 |" in extract(kanji, kind="csv").markdown


def test_json_is_rendered_readably_and_truncated_json_fails() -> None:
    data = b'{"name": "Widget", "tags": ["a", "b"], "items": [{"id": 1, "spec": {"w": 2}}]}'
    markdown = extract(data, kind="json").markdown
    assert "- **name**: Widget" in markdown
    assert "## items" in markdown and "| id | spec.w |" in markdown and "| 1 | 2 |" in markdown
    with pytest.raises(ExtractionFailed, match="invalid or truncated"):
        extract(b'{"name": "Widget", "items": [1, 2', kind="json")


def test_text_strips_bom_and_normalises_newlines() -> None:
    result = extract(b"\xef\xbb\xbfline one\r\nline two\rline three\n", kind="text")
    assert result.markdown == "line one\nline two\nline three\n"


def test_html_keeps_structure_drops_scripts_and_resolves_links() -> None:
    page = b"""<!doctype html><html><head><title>Tiny page</title>
    <script>var secret = "do not index";</script><style>p{}</style></head><body>
    <table><tr><td><h1>Datasheet</h1></td></tr><tr><td>
      <table><tr><th>Grade</th><th>Yield</th></tr><tr><td>SNB22</td><td>890</td></tr></table>
    </td></tr></table>
    <ul><li>one<ul><li>nested</li></ul></li><li>two</li></ul>
    <p>See <a href="/spec">the spec</a> and <a href="javascript:alert(1)">this</a>.</p>
    </body></html>"""
    result = extract(page, kind="html", source_url="https://example.com/steel/page.html")
    markdown = result.markdown
    assert result.title in ("Tiny page", "Datasheet")  # trafilatura picks <title> or <h1>
    assert "# Datasheet" in markdown
    assert "| Grade | Yield |\n|---|---|\n| SNB22 | 890 |" in markdown
    assert "- one\n  - nested\n- two" in markdown
    assert "[the spec](https://example.com/spec)" in markdown
    assert "javascript" not in markdown and "do not index" not in markdown


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        extract(b"x", kind="rtf")


# --- hostile input -------------------------------------------------------------------------


def test_zip_bomb_is_refused_before_any_library_inflates_it() -> None:
    bomb = zip_bomb(megabytes=210)
    assert len(bomb) < 1024 * 1024  # 210 MB of zeros deflate to a few hundred kilobytes
    assert detect_kind(bomb, file_name="cv.docx") == "docx"
    started = time.monotonic()
    with pytest.raises(ExtractionFailed, match="decompression bomb"):
        extract(bomb, kind="docx")
    assert time.monotonic() - started < 1


def test_highly_compressed_member_is_refused_even_under_the_total_limit() -> None:
    with pytest.raises(ExtractionFailed, match="decompression bomb"):
        extract(zip_bomb(megabytes=20), kind="xlsx")


def test_billion_laughs_fails_fast_and_clean() -> None:
    bomb = replace_member(make_docx(), "word/document.xml", BILLION_LAUGHS)
    started = time.monotonic()
    with pytest.raises(ExtractionFailed, match="document type definition"):
        extract(bomb, kind="docx")
    with pytest.raises(ExtractionFailed):
        extract_bounded(bomb, kind="docx", timeout_s=10)
    assert time.monotonic() - started < 5


def test_libraries_refuse_entity_expansion_on_their_own() -> None:
    # The second line of defence: python-docx's parser (lxml/libxml2) will not expand it.
    started = time.monotonic()
    with pytest.raises(etree.XMLSyntaxError, match="amplification"):
        parse_xml(BILLION_LAUGHS)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("kind", ["docx", "xlsx", "pptx", "pdf"])
def test_truncated_files_fail_cleanly(kind: str) -> None:
    data = {"docx": make_docx, "xlsx": make_xlsx, "pptx": make_pptx}.get(
        kind, lambda: make_pdf(["Some text"])
    )()
    for size in (len(data) // 3, len(data) // 2, len(data) - 20):
        try:
            extract(data[:size], kind=kind)
        except ExtractionFailed as exc:
            assert str(exc) and "\n" not in str(exc)


def test_bounded_extraction_returns_the_same_result_as_in_process() -> None:
    data = make_docx()
    assert extract_bounded(data, kind="docx") == extract(data, kind="docx")


def test_bounded_extraction_kills_a_child_that_takes_too_long() -> None:
    big_csv = b"id,name,comment\n" + b"".join(
        f"{i},name {i},some comment text {i}\n".encode() for i in range(300_000)
    )
    started = time.monotonic()
    with pytest.raises(ExtractionFailed, match="took too long"):
        extract_bounded(big_csv, kind="csv", timeout_s=0.01)
    assert time.monotonic() - started < 2


def test_bounded_extraction_survives_running_out_of_memory() -> None:
    # The cap is on address space added to what the child inherits, and a test process may
    # inherit hundreds of MB of freed heap from earlier tests; parsing this needs well over 1 GB.
    big_json = b"[" + b",".join(b'{"key": "%d"}' % i for i in range(4_000_000)) + b"]"
    with pytest.raises(ExtractionFailed, match="too much memory"):
        extract_bounded(big_json, kind="json", memory_mb=16, timeout_s=30)


def test_bounded_extraction_reports_extraction_failures_from_the_child() -> None:
    with pytest.raises(ExtractionFailed, match="invalid or truncated"):
        extract_bounded(b'{"a": ', kind="json")


def _extract_in_daemon(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    result = extract_bounded(b"hello from a daemon", kind="text", timeout_s=10)
    queue.put(result.markdown)


def test_bounded_extraction_works_inside_a_daemonic_worker_process() -> None:
    # Celery's prefork pool runs tasks in daemonic processes, which may not start
    # multiprocessing children; extract_bounded forks directly and must still work there.
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    worker = context.Process(target=_extract_in_daemon, args=(queue,), daemon=True)
    worker.start()
    try:
        assert queue.get(timeout=20) == "hello from a daemon\n"
    finally:
        worker.join(timeout=5)
    assert worker.exitcode == 0


def test_extraction_result_is_a_plain_dataclass() -> None:
    result = extract(b"# Notes\n\nbody", kind="markdown")
    assert result == Extraction(markdown="# Notes\n\nbody\n", page_count=None, title="Notes")
