"""JSON extraction against a pass-through, on generated files of about 10 MB.

    uv run python benchmarks/json_extraction.py [--megabytes 10] [--repeat 3] [--ascii]
        [--write DIR]

The pass-through is what the text kind does with the same bytes (``extract(data, kind="text")``:
decode, normalise newlines, keep the text as it is). Each shape is a kind of JSON people
upload; the table shows, per shape, the fastest pass of each path, in the process
(``extract``) and through ``extract_bounded`` (the forked child with its limits, which is how
the knowledge pipeline extracts files: the result crosses a pipe), and the size of the
markdown against the input's. The JSON and text passes alternate, so a change in the
machine's load touches both; the load average is printed before and after.

* ``records``: an export, an object with a few scalars and one long array of records that
  nest an address object, a list of tags and a list of order objects;
* ``geojson``: a FeatureCollection, features with properties and coordinate arrays;
* ``tree``: configuration-like nesting, objects of objects of mixed lists;
* ``matrix``: an array of arrays of numbers.

``--ascii`` writes the files as Python's ``json.dumps`` does by default (``ensure_ascii=True``):
every non-ASCII character a ``\\uXXXX`` escape, which the outline decodes. ``--write DIR``
keeps each file (``DIR/records.json``, ``DIR/records-ascii.json``, ...), so that the whole
ingestion of the same bytes can be timed: ``benchmarks/worker_memory.py --file`` (uploads take
up to 10 MiB: ``--megabytes 5`` keeps every shape under it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apps.knowledge.extraction import extract, extract_bounded  # noqa: E402

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliett",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "café",
    "über",
    "東京",
    "北京",
    "مرحبا",
    "Привет",
]


def _words(random: Random, count: int) -> str:
    return " ".join(random.choice(WORDS) for _ in range(count))


def _record(random: Random, number: int) -> dict[str, Any]:
    return {
        "id": number,
        "name": _words(random, 2).title(),
        "email": f"user{number}@example.com",
        "active": random.random() < 0.8,
        "score": round(random.uniform(0, 100), 2),
        "address": {"street": _words(random, 3), "city": random.choice(WORDS), "zip": None},
        "tags": [random.choice(WORDS) for _ in range(random.randint(0, 4))],
        "orders": [
            {"sku": f"SKU-{random.randint(1000, 9999)}", "quantity": random.randint(1, 9)}
            for _ in range(random.randint(0, 3))
        ],
        "note": _words(random, random.randint(3, 20)),
    }


def _feature(random: Random, number: int) -> dict[str, Any]:
    ring = [[round(random.uniform(-180, 180), 6), round(random.uniform(-90, 90), 6)]]
    ring += [[round(x + random.uniform(-1, 1), 6), round(y, 6)] for x, y in ring * 8]
    return {
        "type": "Feature",
        "id": number,
        "properties": {"name": _words(random, 2), "population": random.randint(0, 10**6)},
        "geometry": {"type": "Polygon", "coordinates": [ring]},
    }


def _tree(random: Random, depth: int) -> Any:
    if depth == 0:
        return random.choice([_words(random, 4), random.randint(0, 10**6), True, None])
    kind = random.random()
    if kind < 0.5:
        return {f"{random.choice(WORDS)}_{i}": _tree(random, depth - 1) for i in range(4)}
    if kind < 0.8:
        return [_tree(random, depth - 1) for _ in range(4)]
    return _words(random, 6)


def generate(shape: str, megabytes: float, seed: int = 7, *, ascii: bool = False) -> bytes:
    """About ``megabytes`` of JSON of ``shape``, the same bytes for the same seed; with
    ``ascii``, non-ASCII characters as ``\\uXXXX`` escapes (the same values, more bytes)."""
    random = Random(seed)
    target = int(megabytes * 1_000_000)
    items: list[Any] = []
    size = 0
    while size < target:
        if shape == "records":
            item = _record(random, len(items))
        elif shape == "geojson":
            item = _feature(random, len(items))
        elif shape == "tree":
            item = _tree(random, 6)
        elif shape == "matrix":
            item = [random.randint(-(10**6), 10**6) for _ in range(40)]
        else:
            raise ValueError(shape)
        items.append(item)
        size += len(json.dumps(item, ensure_ascii=False).encode()) + 2
    document: Any
    if shape == "records":
        document = {"exported_at": "2026-01-31T12:00:00Z", "source": "crm", "customers": items}
    elif shape == "geojson":
        document = {"type": "FeatureCollection", "features": items}
    elif shape == "tree":
        document = {f"section_{i}": item for i, item in enumerate(items)}
    else:
        document = items
    return json.dumps(document, ensure_ascii=ascii, indent=1).encode()


def _best_of_each(functions: list[Callable[[], object]], repeat: int) -> list[float]:
    """The fastest of ``repeat`` passes of each function, the functions taking turns."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for index, function in enumerate(functions):
            started = time.perf_counter()
            function()
            best[index] = min(best[index], time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=float, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--shape", action="append", choices=["records", "geojson", "tree", "matrix"]
    )
    parser.add_argument(
        "--ascii", action="store_true", help="escape non-ASCII characters, as json.dumps does"
    )
    parser.add_argument("--write", type=Path, help="keep the generated files in this folder")
    args = parser.parse_args()

    print("load average", " ".join(f"{load:.2f}" for load in os.getloadavg()))
    header = (
        f"{'shape':8} {'MB in':>6} {'json s':>7} {'text s':>7} {'ratio':>6} "
        f"{'bounded json s':>14} {'text s':>7} {'ratio':>6} {'MB out':>7} {'out/in':>7}"
    )
    print(header)
    print("-" * len(header))
    for shape in args.shape or ["records", "geojson", "tree", "matrix"]:
        data = generate(shape, args.megabytes, ascii=args.ascii)
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            (args.write / f"{shape}{'-ascii' if args.ascii else ''}.json").write_bytes(data)
        markdown = extract(data, kind="json").markdown
        json_s, text_s, bounded_json_s, bounded_text_s = _best_of_each(
            # Each pass reads the markdown as text: an outline given as UTF-8 is decoded then.
            [
                lambda data=data: extract(data, kind="json").markdown,
                lambda data=data: extract(data, kind="text").markdown,
                lambda data=data: extract_bounded(data, kind="json").markdown,
                lambda data=data: extract_bounded(data, kind="text").markdown,
            ],
            args.repeat,
        )
        out = len(markdown.encode())
        print(
            f"{shape:8} {len(data) / 1e6:6.2f} {json_s:7.3f} {text_s:7.3f} "
            f"{json_s / text_s:6.2f} {bounded_json_s:14.3f} {bounded_text_s:7.3f} "
            f"{bounded_json_s / bounded_text_s:6.2f} {out / 1e6:7.2f} {out / len(data):7.2f}",
            flush=True,
        )
    print("load average", " ".join(f"{load:.2f}" for load in os.getloadavg()))


if __name__ == "__main__":
    main()
