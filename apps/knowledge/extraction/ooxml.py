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

TOO_BIG = "The file expands to more data than we accept (it may be a decompression bomb)."
HOSTILE_XML = "The file contains XML we refuse to read (a document type definition)."


def check_package(data: bytes) -> None:
    """Raise ExtractionFailed unless the ZIP container is safe to hand to a library."""
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
        for info in members:
            if info.filename.endswith((".xml", ".rels", ".vml")):
                _check_prolog(archive, info)


def _check_prolog(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    try:
        with archive.open(info) as member:
            head = member.read(_PROLOG_BYTES)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError):
        raise ExtractionFailed(DAMAGED) from None
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        head = head.decode("utf-16", "ignore").encode("utf-8")
    if not head.strip():
        return
    # A DTD can only come before the root element, so the prolog is all we need to read; a
    # prolog longer than that is itself suspicious.
    root = _START_TAG.search(head)
    if root is None or _DTD.search(head, 0, root.start()):
        raise ExtractionFailed(HOSTILE_XML)
