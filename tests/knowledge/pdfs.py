"""A PDF writer for tests: pages from raw content streams, fonts and images as PDF objects.

Tests need PDFs that libraries will not write (a simple TrueType font whose bytes are GBK
without a ToUnicode map, words drawn right to left, an image that cannot be decoded); they are
assembled here object by object, with a correct cross-reference table.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PdfPage:
    content: bytes
    # Resource dictionary entries, e.g. {"Font": "<< /F1 5 0 R >>"}, object numbers from add().
    resources: dict[str, str] = field(default_factory=dict)
    width: int = 612
    height: int = 792


@dataclass
class PdfBuilder:
    objects: dict[int, bytes] = field(default_factory=dict)
    pages: list[PdfPage] = field(default_factory=list)

    def add(self, body: bytes, stream: bytes | None = None) -> int:
        """Add an object (a dictionary, plus its stream data) and return its number."""
        number = 3 + len(self.objects)
        if stream is not None:
            body = body.rstrip()
            assert body.endswith(b">>")
            body = body[:-2] + f" /Length {len(stream)} >>\nstream\n".encode() + stream
            body += b"\nendstream"
        self.objects[number] = body
        return number

    def page(self, content: bytes, **resources: str) -> None:
        self.pages.append(PdfPage(content=content, resources=resources))

    def build(self, *, info: bytes = b"") -> bytes:
        objects = dict(self.objects)
        kids = []
        for page in self.pages:
            content_id = max(objects, default=2) + 1
            objects[content_id] = (
                f"<< /Length {len(page.content)} >>\nstream\n".encode()
                + page.content
                + b"\nendstream"
            )
            resources = " ".join(f"/{name} {value}" for name, value in page.resources.items())
            page_id = content_id + 1
            objects[page_id] = (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {page.width} {page.height}]"
                f" /Resources << {resources} >> /Contents {content_id} 0 R >>"
            ).encode()
            kids.append(f"{page_id} 0 R")
        objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
        objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
        out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        offsets = {}
        for number in sorted(objects):
            offsets[number] = len(out)
            out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
        xref = len(out)
        size = max(objects) + 1
        out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
        for number in range(1, size):
            out += f"{offsets[number]:010d} 00000 n \n".encode()
        trailer = f"trailer\n<< /Size {size} /Root 1 0 R".encode() + info + b" >>\n"
        out += trailer + f"startxref\n{xref}\n%%EOF\n".encode()
        return bytes(out)


def literal(data: bytes) -> bytes:
    """A PDF literal string holding these bytes."""
    escaped = data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    return b"(" + escaped + b")"


def truetype_font(builder: PdfBuilder, base_font: str, *, to_unicode: int | None = None) -> int:
    """A simple (single-byte) TrueType font, not embedded, without an /Encoding."""
    descriptor = builder.add(
        f"<< /Type /FontDescriptor /FontName /{base_font} /Flags 4 /FontBBox [0 -200 1000 900]"
        " /ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>".encode()
    )
    widths = " ".join(["500"] * 224)
    extra = f" /ToUnicode {to_unicode} 0 R" if to_unicode else ""
    return builder.add(
        f"<< /Type /Font /Subtype /TrueType /BaseFont /{base_font} /FirstChar 32"
        f" /LastChar 255 /Widths [{widths}] /FontDescriptor {descriptor} 0 R{extra} >>".encode()
    )
