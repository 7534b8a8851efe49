"""Extraction over the real corpus, read in place from ``shared/corpus`` (or ``CORPUS_DIR``).

Every row of MANIFEST.tsv is a case: its file must be detected as the manifest's format and
its extraction must contain every expected phrase (both sides compared with whitespace
collapsed). Files with tables must keep them as markdown tables. Every file in bad/ must end
in UnsupportedType or ExtractionFailed, or, where the manifest says lenient parsers recover
text, in that text: never another exception, never a hang.
"""

from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path

import pytest

from apps.knowledge.extraction import (
    ExtractionFailed,
    UnsupportedType,
    detect_kind,
    extract,
    extract_bounded,
)
from tests.corpus import CORPUS_DIR, SKIP_REASON

MANIFEST = CORPUS_DIR / "MANIFEST.tsv"
if not MANIFEST.is_file():
    pytest.skip(
        f"{SKIP_REASON}: no MANIFEST.tsv under {CORPUS_DIR} (set CORPUS_DIR)",
        allow_module_level=True,
    )


def _manifest_rows() -> list[dict[str, str]]:
    with MANIFEST.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


ROWS = _manifest_rows()
GOOD_ROWS = [row for row in ROWS if not row["path"].startswith("bad/")]
BAD_ROWS = [row for row in ROWS if row["path"].startswith("bad/")]

# The manifest names formats by folder; detect_kind names them by kind.
KIND_OF_FORMAT = {"md": "markdown", "txt": "text"}

# Files that must fail (without OCR), with words the failure message must contain.
EXPECTED_FAILURES = {
    "pdf/MEDRPT-2024-PAT-3847_medical_report_scan.pdf": "no extractable text",
    "pdf/libreoffice-writer-password.pdf": "password",
}

# Files documented as holding tables: text that must sit in a cell of a markdown table row.
TABLE_CELLS = {
    "docx/docx-tables.docx": ["Header Col 1", "g&t", ">b<"],
    "docx/markitdown-test.docx": ["49e168b7-d2ae-407f-a055-2167576f39a1"],
    "xlsx/2023-half-year-analyses-by-segment.xlsx": ["Zone LATAM", "Nestlé Health Science"],
    "xlsx/any_sheets.xlsx": [
        "This workbook contains 4 sheets: Visible, Hidden, VeryHidden and Chart"
    ],
    "xlsx/merge_cells.xlsx": ["Chunk Merged", "Not Merged"],
    "xlsx/markitdown-test.xlsx": [
        "6ff4173b-42a5-4784-9b19-f49caff4d93d",
        "affc7dad-52dc-4b98-9b5d-51e65d8a8ad0",
    ],
    "pptx/fake-power-point-table.pptx": ["Tangerine", "Purple"],
    "pptx/markitdown-test.pptx": ["1b92870d-e3b5-4e65-8153-919f4ff45592"],
    "pptx/sample-presentation.pptx": ["A2"],
    "pdf/REPAIR-2022-INV-001_multipage.pdf": ["POL-2022-555", "Grand Cherokee", "5,738"],
    "csv/country-codes.csv": ["Afghanistan", "AFG"],
    "csv/semicolon-delimited.csv": ["Lorem, ipsum", "tempor incididunt"],
    "csv/test_mskanji.csv": ["佐藤太郎", "名古屋"],
    "html/example-steelJIS-datasheet.html": ["SNB22-3"],
}

# The manifest's scan has no text layer and no expected phrases; OCR reads these from it.
SCANNED_REPORT = "pdf/MEDRPT-2024-PAT-3847_medical_report_scan.pdf"
SCANNED_REPORT_PHRASES = [
    "SEATTLE GENERAL HOSPITAL",
    "Report ID MEDRPT-2024-PAT-3847",
    "Date of Birth: March 15, 1978",
]

# Files of bad/ that are broken only as what their name claims: a legacy Word 97 .doc named
# .docx is detected by its bytes and read, with this text.
READ_DESPITE_NAME = {
    "bad/legacy-word97-doc-named-as.docx": ["These are a few of my favorite things", "Parrots"],
}

# What UnsupportedType.detected must say, by the first word of the manifest's format.
DETECTED_NAMES = {
    "png": "PNG",
    "zip": "ZIP",
    "empty": "empty",
    "doc": ".doc",
    "xlsx": "encrypted",
}


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _phrases(row: dict[str, str]) -> list[str]:
    return [p for p in row["expected_phrases"].split(" ||| ") if p.strip()]


def _table_rows(markdown: str) -> list[list[str]]:
    """Cells of every markdown table row (separator rows left out), unescaped."""
    rows = []
    for line in markdown.split("\n"):
        line = line.strip()
        if not line.startswith("|") or re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", line):
            continue
        cells = re.split(r"(?<!\\)\|", line.strip("|"))
        rows.append([cell.strip().replace("\\|", "|") for cell in cells])
    return rows


def _read(row: dict[str, str]) -> bytes:
    return (CORPUS_DIR / row["path"]).read_bytes()


@pytest.mark.parametrize("row", ROWS, ids=[row["path"] for row in ROWS])
def test_corpus_file_matches_manifest_hash(row: dict[str, str]) -> None:
    data = _read(row)
    assert len(data) == int(row["bytes"])
    assert hashlib.sha256(data).hexdigest() == row["sha256"]


@pytest.mark.parametrize("row", GOOD_ROWS, ids=[row["path"] for row in GOOD_ROWS])
def test_corpus_file_is_detected_as_its_format(row: dict[str, str]) -> None:
    kind = detect_kind(_read(row), file_name=Path(row["path"]).name)
    assert kind == KIND_OF_FORMAT.get(row["format"], row["format"])


@pytest.mark.parametrize("row", GOOD_ROWS, ids=[row["path"] for row in GOOD_ROWS])
def test_corpus_extraction_contains_every_expected_phrase(row: dict[str, str]) -> None:
    data = _read(row)
    kind = detect_kind(data, file_name=Path(row["path"]).name)
    if row["path"] in EXPECTED_FAILURES:
        with pytest.raises(ExtractionFailed) as failure:
            extract(data, kind=kind, ocr=False)
        assert EXPECTED_FAILURES[row["path"]] in str(failure.value)
        return
    result = extract(data, kind=kind)
    markdown = _collapse(result.markdown)
    assert markdown
    missing = [p for p in _phrases(row) if _collapse(p) not in markdown]
    assert not missing, f"missing phrases: {missing}"


def test_corpus_scan_is_read_by_ocr_and_says_so() -> None:
    data = (CORPUS_DIR / SCANNED_REPORT).read_bytes()
    result = extract_bounded(data, kind=detect_kind(data), timeout_s=90)
    assert result.ocr_pages == [1, 2, 3]
    assert result.markdown.count("_Text read by OCR from the page image._") == 3
    markdown = _collapse(result.markdown)
    for phrase in SCANNED_REPORT_PHRASES:
        assert phrase in markdown


@pytest.mark.parametrize("path", sorted(TABLE_CELLS))
def test_corpus_tables_stay_markdown_tables(path: str) -> None:
    data = (CORPUS_DIR / path).read_bytes()
    markdown = extract(data, kind=detect_kind(data, file_name=Path(path).name)).markdown
    assert re.search(r"^\|(---\|)+$", markdown, re.MULTILINE), "no table separator line"
    cells = [cell for row in _table_rows(markdown) for cell in row]
    # Exact cells, except text of a table nested in a cell, which is written inside that cell.
    missing = [text for text in TABLE_CELLS[path] if not any(text in cell for cell in cells)]
    assert not missing, f"not found as table cells: {missing}"


@pytest.mark.parametrize("row", BAD_ROWS, ids=[row["path"] for row in BAD_ROWS])
def test_bad_corpus_file_ends_cleanly(row: dict[str, str]) -> None:
    data = _read(row)
    try:
        kind = detect_kind(data, file_name=Path(row["path"]).name)
    except UnsupportedType as exc:
        expected = DETECTED_NAMES.get(row["format"].split()[0])
        if expected:
            assert expected in exc.detected
        return
    try:
        result = extract_bounded(data, kind=kind, timeout_s=30)
    except ExtractionFailed as exc:
        message = str(exc)
        assert message and "\n" not in message and len(message) < 200
        assert not re.search(r"/\w+/|Traceback|Error\(", message)
        return
    if row["path"] in READ_DESPITE_NAME:
        markdown = _collapse(result.markdown)
        assert all(phrase in markdown for phrase in READ_DESPITE_NAME[row["path"]])
        return
    # Only files the manifest says lenient parsers recover may succeed, with that text.
    recovered = re.search(r"recover '([^']+)'", row["notes"])
    assert recovered, "a broken file was extracted without the manifest saying it can be"
    assert recovered.group(1) in _collapse(result.markdown)
