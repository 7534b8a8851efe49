"""Checks every Office Open XML file passes before a library opens it.

python-docx, openpyxl and python-pptx read whole ZIP members into memory and parse them with
lxml. A hostile file can make that explode in two ways, and both are refused here, cheaply,
from the ZIP directory and the first bytes of each XML part:

* a decompression bomb: a few kilobytes that inflate to gigabytes. We add up the declared
  uncompressed sizes (Python's zipfile never inflates a member past its declared size and
  checks the CRC, so the declared sizes are an upper bound) and look at compression ratios;
* an XML entity bomb ("billion laughs"): OOXML never needs a DTD, so a part that declares one
  is refused before any parser sees it. The libraries parse with ``resolve_entities=False``
  (and openpyxl with defusedxml) as a second line of defence.

``check_package`` also returns the bytes the libraries should open, rewritten where they would
otherwise misread a valid file:

* member names written with backslashes (``xl\\workbook.xml``, by some Windows tools) get
  slashes, as the ZIP format asks; the libraries look parts up by their slash names;
* Strict Open XML (ISO/IEC 29500 Strict, "Strict Open XML Spreadsheet" in Excel's Save As)
  names its namespaces and relationship types under ``http://purl.oclc.org/ooxml/``. The
  libraries only know the Transitional names, and find no sheets, paragraphs or slides in a
  Strict file. The two vocabularies differ in those names, so each Strict name is rewritten to
  its Transitional twin.
"""

from __future__ import annotations

import io
import re
import zipfile

from .errors import DAMAGED, ExtractionFailed

MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_MEMBERS = 10_000
# Real XML compresses up to ~100:1 (a sheet of repeated empty cells); bombs reach 1000:1.
# The ratio is only checked for members big enough to matter.
MAX_RATIO = 200
RATIO_CHECKED_FROM_BYTES = 10 * 1024 * 1024
_PROLOG_BYTES = 64 * 1024
_DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.IGNORECASE)
_START_TAG = re.compile(rb"<[A-Za-z_]")
_STRICT = b"http://purl.oclc.org/ooxml/"
# Strict names whose Transitional twin is spelled differently; the rest follow one pattern.
_STRICT_RENAMED = {
    b"http://purl.oclc.org/ooxml/officeDocument/relationships/extendedProperties": (
        b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties"
    ),
    b"http://purl.oclc.org/ooxml/officeDocument/relationships/customProperties": (
        b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/custom-properties"
    ),
    b"http://purl.oclc.org/ooxml/officeDocument/extendedProperties": (
        b"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"
    ),
    b"http://purl.oclc.org/ooxml/officeDocument/customProperties": (
        b"http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"
    ),
}
# http://purl.oclc.org/ooxml/<area>/<name> -> http://schemas.openxmlformats.org/<area>/2006/<name>
_STRICT_NAME = re.compile(rb"http://purl\.oclc\.org/ooxml/([A-Za-z]+)/")

TOO_BIG = "The file expands to more data than we accept (it may be a decompression bomb)."
HOSTILE_XML = "The file contains XML we refuse to read (a document type definition)."


def check_package(data: bytes) -> bytes:
    """The package for a library to open; ExtractionFailed unless it is safe to open."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError):
        raise ExtractionFailed(DAMAGED) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ExtractionFailed(TOO_BIG)
        total = 0
        for info in members:
            total += info.file_size
            if total > MAX_UNCOMPRESSED_BYTES:
                raise ExtractionFailed(TOO_BIG)
            if info.file_size > RATIO_CHECKED_FROM_BYTES and info.file_size > MAX_RATIO * max(
                info.compress_size, 1
            ):
                raise ExtractionFailed(TOO_BIG)
        strict = False
        for info in members:
            if info.filename.endswith((".xml", ".rels", ".vml")):
                strict = _check_prolog(archive, info) or strict
        if not strict and not any("\\" in info.filename for info in members):
            return data
        return _rewritten(archive, members)


def _rewritten(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo]) -> bytes:
    """A copy of the package with slash names and Transitional namespaces."""
    output = io.BytesIO()
    try:
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as copy:
            for info in members:
                name = info.filename.replace("\\", "/")
                content = archive.read(info)
                if name.endswith((".xml", ".rels")) and _STRICT in content:
                    content = _transitional(content)
                copy.writestr(name, content)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError):
        raise ExtractionFailed(DAMAGED) from None
    return output.getvalue()


def _transitional(xml: bytes) -> bytes:
    for strict, transitional in _STRICT_RENAMED.items():
        xml = xml.replace(strict, transitional)
    return _STRICT_NAME.sub(rb"http://schemas.openxmlformats.org/\1/2006/", xml)


def _check_prolog(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bool:
    """Refuse a part that declares a DTD; True when its root names a Strict namespace."""
    try:
        with archive.open(info) as member:
            head = member.read(_PROLOG_BYTES)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError):
        raise ExtractionFailed(DAMAGED) from None
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        head = head.decode("utf-16", "ignore").encode("utf-8")
    if not head.strip():
        return False
    # A DTD can only come before the root element, so the prolog is all we need to read; a
    # prolog longer than that is itself suspicious.
    root = _START_TAG.search(head)
    if root is None or _DTD.search(head, 0, root.start()):
        raise ExtractionFailed(HOSTILE_XML)
    return _STRICT in head
