"""PDF text that pypdf alone gets wrong: CJK bytes in simple TrueType fonts without a
ToUnicode map, and pages whose inline image cannot be parsed. The PDFs are assembled by
``tests.knowledge.pdfs``, object by object, as the writers that produce them in the wild do."""

from __future__ import annotations

import io
import re

import pytest
from pypdf import PdfReader

from apps.knowledge.extraction import ExtractionFailed, extract
from tests.knowledge.pdfs import PdfBuilder, literal, truetype_font


def one_font_pdf(base_font: str, lines: list[bytes], *, encoding: str | None = None) -> bytes:
    builder = PdfBuilder()
    font = truetype_font(builder, base_font)
    if encoding:
        builder.objects[font] = builder.objects[font][:-2] + f" /Encoding /{encoding} >>".encode()
    shown = b" ".join(literal(line) + b" Tj 0 -20 Td" for line in lines)
    builder.page(b"BT /F1 12 Tf 72 720 Td " + shown + b" ET", Font=f"<< /F1 {font} 0 R >>")
    return builder.build()


@pytest.mark.parametrize(
    ("base_font", "codec", "text"),
    [
        ("SimSun", "gbk", "增值税发票 开票日期 金额合计"),
        ("MingLiU", "big5", "統一發票 買受人 總計金額"),
        ("MS-Mincho", "cp932", "請求書 お支払い期限 合計金額"),
        # No hint in the name: common simplified Chinese is recognised as GB2312.
        ("F0", "gbk", "会议纪要 项目进度 下周计划"),
    ],
)
def test_cjk_bytes_in_a_simple_truetype_font_are_decoded_as_their_encoding(
    base_font: str, codec: str, text: str
) -> None:
    data = one_font_pdf(base_font, [text.encode(codec), b"Ref 2024-118"])
    # pypdf alone reads the bytes one by one: mojibake.
    assert text.split()[0] not in PdfReader(io.BytesIO(data)).pages[0].extract_text()
    markdown = extract(data, kind="pdf").markdown
    assert text in markdown
    assert "Ref 2024-118" in markdown


def test_western_text_in_such_a_font_is_left_as_it_is() -> None:
    line = "Herr Müller zahlt für Straße à Noël".encode("cp1252")
    data = one_font_pdf("Arial", [line], encoding="WinAnsiEncoding")
    assert "Herr Müller zahlt für Straße à Noël" in extract(data, kind="pdf").markdown


def test_western_text_without_an_encoding_is_not_taken_for_cjk() -> None:
    # "Müller" and "Straße" are valid Shift-JIS byte pairs; mostly Latin text is not CJK.
    data = one_font_pdf("Arial", ["Herr Müller zahlt für Straße, “Noël”".encode("cp1252")])
    markdown = extract(data, kind="pdf").markdown
    assert "Herr Müller zahlt für Straße, “Noël”" in markdown
    assert not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", markdown)


def test_page_whose_inline_image_cannot_be_parsed_keeps_its_text_layer() -> None:
    builder = PdfBuilder()
    font = builder.add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    broken_image = b"q 100 0 0 100 72 500 cm BI /W 10 /H 10 /BPC 8 /CS /G /F /DCT ID \xff\xd8\x00"
    builder.page(
        b"BT /F1 12 Tf 72 700 Td (Invoice 42, total due 310 EUR) Tj ET " + broken_image,
        Font=f"<< /F1 {font} 0 R >>",
    )
    builder.page(b"BT /F1 12 Tf 72 700 Td (Terms on page two) Tj ET", Font=f"<< /F1 {font} 0 R >>")
    data = builder.build()
    with pytest.raises(Exception):  # noqa: B017 - the fixture really stops pypdf
        PdfReader(io.BytesIO(data)).pages[0].extract_text()

    markdown = extract(data, kind="pdf", ocr=False).markdown
    assert "## Page 1\n\nInvoice 42, total due 310 EUR" in markdown
    assert "## Page 2\n\nTerms on page two" in markdown


def test_pdf_whose_only_page_has_a_broken_image_and_no_text_still_fails_cleanly() -> None:
    builder = PdfBuilder()
    builder.page(b"q 100 0 0 100 72 500 cm BI /W 10 /H 10 /BPC 8 /CS /G /F /DCT ID \xff\xd8\x00")
    with pytest.raises(ExtractionFailed, match="no extractable text"):
        extract(builder.build(), kind="pdf")


# Hebrew letters through a ToUnicode map: bytes A-E are ש ל ו ם ע. Each word's bytes are in
# visual order (last letter first), as writers that draw right-to-left text word by word do.
HEBREW_CMAP = b"""/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def
1 begincodespacerange <00> <FF> endcodespacerange
5 beginbfchar <41> <05E9> <42> <05DC> <43> <05D5> <44> <05DD> <45> <05E2> endbfchar
endcmap CMapName currentdict /CMap defineresource pop end end"""
SHALOM, OLAM = "שלום", "עלום"  # drawn as (DCBA) and (DCBE)


def words_pdf(words: list[tuple[int, bytes, str]]) -> bytes:
    """One line of words, each its own text object at x, in the Hebrew or Helvetica font."""
    builder = PdfBuilder()
    to_unicode = builder.add(b"<< >>", HEBREW_CMAP)
    hebrew = truetype_font(builder, "ArialHebrew", to_unicode=to_unicode)
    latin = builder.add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    shown = b" ".join(
        f"BT /{font} 12 Tf {x} 700 Td ".encode() + literal(word) + b" Tj ET"
        for x, word, font in words
    )
    builder.page(shown, Font=f"<< /He {hebrew} 0 R /La {latin} 0 R >>")
    return builder.build()


def test_rtl_words_drawn_left_to_right_are_put_in_reading_order() -> None:
    data = words_pdf([(100, b"DCBE", "He"), (160, b"DCBA", "He")])
    # pypdf alone: the words in drawing (visual) order.
    assert OLAM + SHALOM in PdfReader(io.BytesIO(data)).pages[0].extract_text()
    assert f"## Page 1\n\n{SHALOM} {OLAM}" in extract(data, kind="pdf").markdown


def test_numbers_and_latin_inside_an_rtl_line_keep_their_own_order() -> None:
    # Visual, left to right: OLAM, "PDF 2024", SHALOM -> reading order: SHALOM, "PDF 2024", OLAM.
    data = words_pdf(
        [(100, b"DCBE", "He"), (140, b"PDF", "La"), (170, b"2024", "La"), (210, b"DCBA", "He")]
    )
    assert f"{SHALOM} PDF 2024 {OLAM}" in extract(data, kind="pdf").markdown


def test_rtl_words_drawn_right_to_left_are_already_in_reading_order() -> None:
    data = words_pdf([(160, b"DCBA", "He"), (100, b"DCBE", "He")])
    markdown = extract(data, kind="pdf").markdown
    assert SHALOM in markdown and OLAM in markdown
    assert markdown.index(SHALOM) < markdown.index(OLAM)
