"""OCR of scanned PDF pages: images rendered by Pillow, placed in PDFs built by the test, read
by Debian's tesseract inside the bounded child."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from apps.knowledge.extraction import ExtractionFailed, extract, extract_bounded
from apps.knowledge.extraction.pdf import NOT_READ_BY_OCR, READ_BY_OCR
from apps.knowledge.extraction.tools import set_deadline
from tests.knowledge.pdfs import PdfBuilder

NOTO_CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")


def text_image(lines: list[str], *, font: ImageFont.FreeTypeFont | None = None) -> bytes:
    """A white page with black text, as JPEG bytes (what scanners put in PDFs)."""
    font = font or ImageFont.load_default(size=44)
    image = Image.new("L", (1700, 120 + 90 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((80, 60 + 90 * index), line, fill=0, font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def scanned_pdf(*pages: bytes | str) -> bytes:
    """One page per item: JPEG bytes become a full-width image, a string a text layer."""
    builder = PdfBuilder()
    font = builder.add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for page in pages:
        if isinstance(page, str):
            builder.page(
                f"BT /F1 12 Tf 72 720 Td ({page}) Tj ET".encode(), Font=f"<< /F1 {font} 0 R >>"
            )
            continue
        width, height = Image.open(io.BytesIO(page)).size
        image = builder.add(
            f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height}"
            " /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode >>".encode(),
            page,
        )
        drawn_height = round(612 * height / width)
        builder.page(
            f"q 612 0 0 {drawn_height} 0 {792 - drawn_height} cm /Im1 Do Q".encode(),
            XObject=f"<< /Im1 {image} 0 R >>",
        )
    return builder.build()


ENGLISH = ["Invoice number 48213", "Total amount due 1,250 EUR", "Payment within thirty days"]


def test_scanned_page_is_read_by_ocr_in_the_bounded_child_and_says_so() -> None:
    data = scanned_pdf("Cover page with a text layer", text_image(ENGLISH))
    result = extract_bounded(data, kind="pdf", timeout_s=60)
    assert result.ocr_pages == [2]
    assert "## Page 1\n\nCover page with a text layer" in result.markdown
    page_two = result.markdown.split("## Page 2\n\n", 1)[1]
    assert page_two.startswith(READ_BY_OCR + "\n\n")
    for line in ENGLISH:
        assert line in page_two


def test_without_ocr_a_scan_fails_as_scanned() -> None:
    with pytest.raises(ExtractionFailed, match="no extractable text"):
        extract(scanned_pdf(text_image(ENGLISH)), kind="pdf", ocr=False)


def test_ocr_of_another_script_uses_its_language() -> None:
    if not NOTO_CJK.is_file():
        pytest.fail(f"{NOTO_CJK} missing: run scripts/install_os_packages.sh (fonts-noto-cjk)")
    font = ImageFont.truetype(str(NOTO_CJK), 56)
    lines = ["会议纪要：项目进度正常", "下周计划完成测试工作", "财务报告已经提交审核"]
    result = extract(scanned_pdf(text_image(lines, font=font)), kind="pdf")
    assert result.ocr_pages == [1]
    text = result.markdown.replace(" ", "")
    assert "项目进度" in text and "财务报告" in text


def test_pages_left_when_time_runs_out_are_marked_not_read() -> None:
    data = scanned_pdf("Text page", text_image(ENGLISH))
    set_deadline(time.monotonic() + 3)  # less than OCR needs to start a page
    try:
        result = extract(data, kind="pdf")
    finally:
        set_deadline(None)
    assert result.ocr_pages == []
    assert f"## Page 2\n\n{NOT_READ_BY_OCR}" in result.markdown


def test_image_too_small_to_hold_text_is_not_ocred() -> None:
    tiny = io.BytesIO()
    Image.new("L", (8, 8), 255).save(tiny, format="JPEG")
    with pytest.raises(ExtractionFailed, match="no extractable text"):
        extract(scanned_pdf(tiny.getvalue()), kind="pdf")
