"""OCR of page images with Debian's tesseract, run inside the bounded extraction child.

English is read first. When tesseract is not confident in the English reading (mean word
confidence under ``CONFIDENT``), its orientation-and-script detection names the image's script
and the image is read again with that script's language (plus English); the more confident
reading wins. The languages are those of the corpus we serve: Arabic, Chinese (simplified and
traditional), Japanese, Korean, Russian, Thai and Hindi, each installed by
``scripts/install_os_packages.sh``; a language that is not installed is skipped.

Each run has a timeout within the child's deadline and the child's memory cap (see ``tools``);
tesseract runs on one thread (``OMP_THREAD_LIMIT=1``), so one document takes one core.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass

from .errors import ExtractionFailed
from .tools import INPUT, run_tool, time_left

CONFIDENT = 70.0
# One image never gets more than this, so a document of many pages keeps time for the rest.
PER_IMAGE_TIMEOUT_S = 30.0
NO_TESSERACT = "OCR is not available on this server."
_SCRIPT_LANGUAGES = {
    "Arabic": "ara",
    "Cyrillic": "rus",
    "Han": "chi_sim+chi_tra",
    "HanS": "chi_sim",
    "HanT": "chi_tra",
    "Japanese": "jpn",
    "Hiragana": "jpn",
    "Katakana": "jpn",
    "Hangul": "kor",
    "Korean": "kor",
    "Thai": "tha",
    "Devanagari": "hin",
}
_SCRIPT = re.compile(r"^Script: (\w+)$", re.MULTILINE)


@dataclass
class Reading:
    text: str
    confidence: float


def ocr_image(data: bytes, *, suffix: str, dpi: int | None = None) -> str:
    """The text tesseract reads in an image file's bytes ("" when it finds none)."""
    english = _read(data, suffix=suffix, dpi=dpi, languages="eng")
    if english.confidence >= CONFIDENT or time_left() < PER_IMAGE_TIMEOUT_S / 2:
        return english.text
    languages = _script_languages(data, suffix=suffix, dpi=dpi)
    if not languages:
        return english.text
    other = _read(data, suffix=suffix, dpi=dpi, languages=f"{languages}+eng")
    return other.text if other.confidence > english.confidence else english.text


def _read(data: bytes, *, suffix: str, dpi: int | None, languages: str) -> Reading:
    # TSV output: one row per word with its confidence and its block, paragraph and line.
    output = _tesseract(data, suffix=suffix, dpi=dpi, options=["-l", languages, "tsv"])
    paragraphs: dict[tuple[str, str], dict[str, list[str]]] = {}
    confidences = []
    for row in output.decode("utf-8", "replace").splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) != 12 or fields[0] != "5" or not fields[11].strip():
            continue
        try:
            confidence = float(fields[10])
        except ValueError:
            continue
        if confidence < 0:
            continue
        confidences.append(confidence)
        lines = paragraphs.setdefault((fields[2], fields[3]), {})
        lines.setdefault(fields[4], []).append(fields[11].strip())
    text = "\n\n".join(
        "\n".join(" ".join(words) for words in lines.values()) for lines in paragraphs.values()
    )
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return Reading(text=text, confidence=mean)


def _script_languages(data: bytes, *, suffix: str, dpi: int | None) -> str | None:
    """The installed language(s) for the script tesseract detects, if not Latin."""
    try:
        output = _tesseract(data, suffix=suffix, dpi=dpi, options=["--psm", "0", "-l", "osd"])
    except ExtractionFailed:
        return None  # too little text to tell the script: keep the English reading
    match = _SCRIPT.search(output.decode("utf-8", "replace"))
    if match is None or match.group(1) not in _SCRIPT_LANGUAGES:
        return None
    wanted = _SCRIPT_LANGUAGES[match.group(1)].split("+")
    installed = [language for language in wanted if language in installed_languages()]
    return "+".join(installed) or None


def _tesseract(data: bytes, *, suffix: str, dpi: int | None, options: list[str]) -> bytes:
    args = ["tesseract", INPUT, "stdout"]
    if dpi:
        args += ["--dpi", str(max(70, min(dpi, 600)))]
    return run_tool(
        [*args, *options],
        data=data,
        suffix=suffix,
        missing=NO_TESSERACT,
        timeout_s=PER_IMAGE_TIMEOUT_S,
    )


@functools.cache
def installed_languages() -> frozenset[str]:
    """The languages tesseract has data for (empty when tesseract is not installed)."""
    try:
        listed = subprocess.run(
            ["tesseract", "--list-langs"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    lines = listed.stdout.decode("utf-8", "replace").splitlines()
    return frozenset(line.strip() for line in lines[1:] if line.strip())
