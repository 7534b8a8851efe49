"""Extraction speed over the corpus, per format, and PDF speed against plain pypdf.

    uv run python benchmarks/extraction.py [--corpus DIR] [--repeat N]

Each file that extracts is extracted N times in this process (``extract``, no fork); the
table shows the fastest pass of each file (the least disturbed by other work on the machine). The PDF baseline is what a bare pypdf loop does on the same
files: ``PdfReader(...).pages[i].extract_text()`` for every page (decrypting with the empty
password where needed). The last line is the cost ``extract_bounded`` adds per call (fork, limits,
pickling the result back).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfReader

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apps.knowledge.extraction import (  # noqa: E402
    ExtractionFailed,
    UnsupportedType,
    detect_kind,
    extract,
    extract_bounded,
)


@dataclass
class Totals:
    files: int = 0
    bytes: int = 0
    pages: int = 0
    seconds: float = 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    files = _corpus_files(args.corpus)
    totals: dict[str, Totals] = defaultdict(Totals)
    pdfs: list[bytes] = []
    skipped = []
    for path in files:
        data = path.read_bytes()
        try:
            kind = detect_kind(data, file_name=path.name)
            # OCR off: it times the extractors; OCR's cost is per scanned page (docs/performance.md).
            result = extract(data, kind=kind, ocr=False)  # warm-up, and skip files that fail
        except (UnsupportedType, ExtractionFailed) as exc:
            skipped.append(f"{path.relative_to(args.corpus)}: {exc}")
            continue
        seconds = _best(
            lambda data=data, kind=kind: extract(data, kind=kind, ocr=False), args.repeat
        )
        total = totals[kind]
        total.files += 1
        total.bytes += len(data)
        total.pages += (result.page_count or 0) if kind == "pdf" else 0
        total.seconds += seconds
        if kind == "pdf":
            pdfs.append(data)

    print(f"corpus: {args.corpus}  repeat: {args.repeat}  (seconds are per pass)\n")
    header = f"{'format':10} {'files':>5} {'MB':>8} {'pages':>6} {'seconds':>9} {'MB/s':>8} {'pages/s':>8}"
    print(header)
    print("-" * len(header))
    for kind in sorted(totals):
        _row(kind, totals[kind])
    everything = Totals(
        files=sum(t.files for t in totals.values()),
        bytes=sum(t.bytes for t in totals.values()),
        pages=sum(t.pages for t in totals.values()),
        seconds=sum(t.seconds for t in totals.values()),
    )
    _row("all", everything)

    if pdfs:
        # Ours and the baseline alternate on each file, so both see the same machine load.
        ours = Totals(files=len(pdfs), bytes=sum(map(len, pdfs)))
        baseline = Totals(files=len(pdfs), bytes=ours.bytes)
        for data in pdfs:
            ours_best = baseline_best = float("inf")
            for _ in range(args.repeat):
                ours_best = min(
                    ours_best, _best(lambda d=data: extract(d, kind="pdf", ocr=False), 1)
                )
                baseline_best = min(baseline_best, _best(lambda d=data: _plain_pypdf(d), 1))
            ours.seconds += ours_best
            baseline.seconds += baseline_best
            baseline.pages += _plain_pypdf(data)
        ours.pages = baseline.pages
        print()
        _row("pdf", ours)
        _row("pypdf", baseline)
        print(
            f"\nPDF: ours {ours.pages / ours.seconds:.0f} pages/s, plain pypdf "
            f"{baseline.pages / baseline.seconds:.0f} pages/s "
            f"(ours takes {ours.seconds / baseline.seconds:.2f}x the baseline's time)"
        )

    small = b"A short text file for timing the fork.\n" * 10
    fork_seconds = _best(lambda: extract_bounded(small, kind="text"), max(args.repeat, 20))
    in_process = _best(lambda: extract(small, kind="text"), max(args.repeat, 20))
    print(f"extract_bounded overhead: {1000 * (fork_seconds - in_process):.1f} ms per call")
    if skipped:
        print("\nnot timed (they do not extract, by design):")
        for line in skipped:
            print(f"  {line}")


def _corpus_files(corpus: Path) -> list[Path]:
    manifest = corpus / "MANIFEST.tsv"
    if not manifest.is_file():
        sys.exit(f"no MANIFEST.tsv in {corpus}; pass --corpus DIR")
    with manifest.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [corpus / row["path"] for row in rows if not row["path"].startswith("bad/")]


def _best(function: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` calls, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def _plain_pypdf(data: bytes) -> int:
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        reader.decrypt("")
    for page in reader.pages:
        page.extract_text()
    return len(reader.pages)


def _row(name: str, total: Totals) -> None:
    megabytes = total.bytes / 1e6
    seconds = max(total.seconds, 1e-9)
    pages = f"{total.pages:6d}" if total.pages else f"{'':6}"
    pages_per_second = f"{total.pages / seconds:8.0f}" if total.pages else f"{'':8}"
    print(
        f"{name:10} {total.files:5d} {megabytes:8.3f} {pages} {total.seconds:9.4f} "
        f"{megabytes / seconds:8.2f} {pages_per_second}"
    )


if __name__ == "__main__":
    main()
