"""PDF extraction time: ours against MarkItDown 0.1.8 (DESIGN.md's yardstick), same files.

    python3 -m venv /tmp/markitdown && /tmp/markitdown/bin/pip install 'markitdown[pdf]==0.1.8'
    MARKITDOWN_PYTHON=/tmp/markitdown/bin/python uv run python benchmarks/pdf_vs_markitdown.py

MarkItDown is not a dependency of the project, so it runs in its own interpreter; each side
takes the best of --repeats passes per file, over every corpus PDF that opens without a
password (CORPUS_DIR, default ../shared/corpus).
"""

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MARKITDOWN_TIMER = """
import sys, time
from markitdown import MarkItDown
converter = MarkItDown()
for path in sys.argv[2:]:
    best = 1e9
    for _ in range(int(sys.argv[1])):
        started = time.perf_counter()
        try:
            converter.convert(path)
        except Exception:
            pass
        best = min(best, time.perf_counter() - started)
    print(f"{best:.6f}")
"""


def corpus_pdfs() -> list[Path]:
    corpus = Path(os.environ.get("CORPUS_DIR", ROOT.parent / "shared" / "corpus"))
    return [p for p in sorted((corpus / "pdf").glob("*.pdf")) if "password" not in p.name]


def ours(paths: list[Path], repeats: int) -> list[float]:
    from apps.knowledge.extraction import ExtractionFailed, extract

    times = []
    for path in paths:
        data = path.read_bytes()
        best = 1e9
        for _ in range(repeats):
            started = time.perf_counter()
            with contextlib.suppress(ExtractionFailed):  # the scanned PDF fails, by design
                extract(data, kind="pdf")
            best = min(best, time.perf_counter() - started)
        times.append(best)
    return times


def markitdown(paths: list[Path], repeats: int) -> list[float] | None:
    python = os.environ.get("MARKITDOWN_PYTHON")
    if not python:
        return None
    completed = subprocess.run(
        [python, "-c", MARKITDOWN_TIMER, str(repeats), *map(str, paths)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if completed.returncode != 0:
        message = (completed.stderr.strip() or completed.stdout.strip() or "no output")[-2000:]
        raise SystemExit(
            f"MarkItDown ({python}) exited with status {completed.returncode}: {message}"
        )
    return [float(line) for line in completed.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    paths = corpus_pdfs()
    ours_times = ours(paths, args.repeats)
    theirs = markitdown(paths, args.repeats)
    print(f"{'file':50} {'ours':>9} {'markitdown':>11}")
    for index, path in enumerate(paths):
        other = f"{theirs[index]:.3f} s" if theirs else "—"
        print(f"{path.name:50} {ours_times[index]:7.3f} s {other:>11}")
    total = sum(ours_times)
    line = f"{'total':50} {total:7.3f} s"
    if theirs:
        line += f" {sum(theirs):9.3f} s   (ours takes {total / sum(theirs):.2f}x MarkItDown's time)"
    print(line)
    if not theirs:
        print("Set MARKITDOWN_PYTHON to an interpreter with markitdown[pdf]==0.1.8 to compare.")


if __name__ == "__main__":
    main()
