"""Tell what a file really is from its bytes.

The name is never trusted for binary formats: a PNG called ``report.pdf`` is a PNG. Office
Open XML files are ZIP archives, told apart by the parts they contain (member names written
with backslashes by some Windows tools count as slashes). Legacy Office 97-2003 files are OLE2
compound files, told apart by the streams their directory lists. The file name only chooses
among the text kinds (a ``.csv`` and a ``.txt`` can hold the same bytes), and says whether
blank bytes are an empty text file (``notes.txt``) or a broken file of another kind
(``report.pdf``).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import PurePosixPath

import olefile

from .errors import UnsupportedType
from .text import decode_text, looks_binary

# Binary signatures we refuse, checked at offset 0, with the name shown to people.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"BM", "BMP image"),
    (b"\x00\x00\x01\x00", "icon image"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"Rar!\x1a\x07", "RAR archive"),
    (b"\x7fELF", "executable program"),
    (b"MZ", "Windows executable"),
    (b"ID3", "MP3 audio"),
    (b"OggS", "Ogg media"),
    (b"fLaC", "FLAC audio"),
    (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"wOFF", "web font"),
    (b"wOF2", "web font"),
)
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

# The main part of each Office Open XML kind, by conventional name and by content type.
_OOXML_PARTS = {
    "word/document.xml": "docx",
    "xl/workbook.xml": "xlsx",
    "ppt/presentation.xml": "pptx",
}
_OOXML_CONTENT_TYPES = {
    "wordprocessingml.document.main+xml": "docx",
    "wordprocessingml.template.main+xml": "docx",
    "ms-word.document.macroEnabled.main+xml": "docx",
    "spreadsheetml.sheet.main+xml": "xlsx",
    "spreadsheetml.template.main+xml": "xlsx",
    "ms-excel.sheet.macroEnabled.main+xml": "xlsx",
    "presentationml.presentation.main+xml": "pptx",
    "presentationml.slideshow.main+xml": "pptx",
    "presentationml.template.main+xml": "pptx",
    "ms-powerpoint.presentation.macroEnabled.main+xml": "pptx",
}
_ODF_NAMES = {
    "application/vnd.oasis.opendocument.text": "OpenDocument text (.odt)",
    "application/vnd.oasis.opendocument.spreadsheet": "OpenDocument spreadsheet (.ods)",
    "application/vnd.oasis.opendocument.presentation": "OpenDocument presentation (.odp)",
    "application/epub+zip": "EPUB e-book",
}

_TEXT_SUFFIXES = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".csv": "csv",
    ".tsv": "csv",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
}
# Blank bytes are a valid, empty file only under a name that says a text kind; a blank ".pdf"
# or ".json" is not a valid file of its kind.
_BLANK_TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown", ".mdown", ".csv", ".tsv"}
_BLANK_TEXT_SUFFIXES |= {".html", ".htm", ".xhtml"}
_HTML_HINT = re.compile(rb"<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>]", re.IGNORECASE)


def detect_kind(data: bytes, *, file_name: str | None = None) -> str:
    """Return one of ``SUPPORTED_KINDS`` for these bytes, or raise ``UnsupportedType``."""
    if not data or not data.strip():
        return _blank_kind(file_name)
    # PDF allows junk before the header; readers look in the first kilobyte.
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_kind(data)
    if data.startswith(_OLE2):
        return _ole2_kind(data)
    if data[8:12] == b"WEBP" and data.startswith(b"RIFF"):
        raise UnsupportedType("WebP image")
    if data[4:8] == b"ftyp":
        raise UnsupportedType("MP4/QuickTime media")
    for signature, name in _SIGNATURES:
        if data.startswith(signature) and looks_binary(data[:4096]):
            raise UnsupportedType(name)
    if data.startswith((b"{\\rtf", b"%!PS")):
        raise UnsupportedType("RTF document" if data.startswith(b"{") else "PostScript document")
    return _text_kind(data, file_name=file_name)


def _zip_kind(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = {name.replace("\\", "/") for name in archive.namelist()}
            for part, kind in _OOXML_PARTS.items():
                if part in names:
                    return kind
            if "xl/workbook.bin" in names:
                raise UnsupportedType("Excel binary workbook (.xlsb)")
            if "[Content_Types].xml" in names:
                types = archive.read(_member(archive, "[Content_Types].xml"))[:200_000].decode(
                    "utf-8", "replace"
                )
                for suffix, kind in _OOXML_CONTENT_TYPES.items():
                    if suffix in types:
                        return kind
            if "mimetype" in names:
                mimetype = (
                    archive.read(_member(archive, "mimetype"))[:100]
                    .decode("ascii", "replace")
                    .strip()
                )
                raise UnsupportedType(_ODF_NAMES.get(mimetype, "ZIP archive"))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, KeyError, ValueError):
        raise UnsupportedType("damaged ZIP archive") from None
    raise UnsupportedType("ZIP archive")


def _member(archive: zipfile.ZipFile, name: str) -> str:
    """The archive's own spelling of ``name`` (which may use backslashes)."""
    for candidate in archive.namelist():
        if candidate.replace("\\", "/") == name:
            return candidate
    raise KeyError(name)


def _blank_kind(file_name: str | None) -> str:
    suffix = PurePosixPath((file_name or "").replace("\\", "/")).suffix.lower()
    if suffix not in _BLANK_TEXT_SUFFIXES:
        raise UnsupportedType("empty file")
    return _TEXT_SUFFIXES.get(suffix, "text")


def _ole2_kind(data: bytes) -> str:
    """Name an OLE2/CFB container by the streams its directory lists."""
    try:
        with olefile.OleFileIO(data) as container:
            streams = {"/".join(path) for path in container.listdir(streams=True, storages=False)}
    except Exception:
        # olefile raises OSError, struct.error, IndexError, ... on a broken directory.
        raise UnsupportedType("damaged legacy Office (OLE2) file") from None
    if {"EncryptedPackage", "EncryptionInfo"} & streams:
        raise UnsupportedType("encrypted Office document")
    if "WordDocument" in streams:
        return "doc"
    if {"Workbook", "Book"} & streams:
        return "xls"
    if "PowerPoint Document" in streams:
        return "ppt"
    if any(name.startswith("__substg1.0_") for name in streams):
        raise UnsupportedType("Outlook message (.msg)")
    raise UnsupportedType("legacy Office (OLE2) file")


def _text_kind(data: bytes, *, file_name: str | None) -> str:
    text = decode_text(data)
    if text is None:
        raise UnsupportedType("binary data of an unknown type")
    suffix = PurePosixPath((file_name or "").replace("\\", "/")).suffix.lower()
    if suffix in _TEXT_SUFFIXES:
        return _TEXT_SUFFIXES[suffix]
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(stripped)
        except (ValueError, RecursionError):
            pass
        else:
            return "json"
    if _HTML_HINT.search(data[:8192]):
        return "html"
    return "text"
