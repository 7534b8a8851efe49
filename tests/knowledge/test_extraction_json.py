"""JSON: readable tables and lists for ordinary files, an outline of compact JSON lines for
large ones, every item kept, never bigger than the input."""

from __future__ import annotations

import json
import re
from random import Random
from typing import Any

import pytest

from apps.knowledge.extraction import ExtractionFailed, chunk_markdown, extract, extract_bounded
from apps.knowledge.extraction.json_outline import LINE_LIMIT
from apps.knowledge.extraction.tabular import OUTLINE_FROM_BYTES, extract_json

WORDS = ["alpha", "bravo", "charlie", "delta", "café", "über", "東京", "مرحبا", "Привет", "zulu"]

# Rows of numbers that make a file just over OUTLINE_FROM_BYTES, as one object or one per line.
ROWS = 160_000


def records(count: int) -> list[dict[str, object]]:
    return [
        {
            "id": number,
            "name": f"Customer {number}",
            "address": {"city": "Zürich" if number % 2 else "東京", "zip": None},
            "tags": ["vip", "b2b"] if number % 3 == 0 else [],
            "orders": [{"sku": f"SKU-{number}", "quantity": 2}],
            "active": number % 5 != 0,
            "score": number / 8,
        }
        for number in range(count)
    ]


def test_every_record_of_an_array_is_a_table_row_with_flattened_columns() -> None:
    data = json.dumps({"exported": "2026-01-31", "customers": records(2_500)}).encode()
    assert len(data) < OUTLINE_FROM_BYTES
    markdown = extract(data, kind="json").markdown
    assert markdown.startswith("- **exported**: 2026-01-31\n\n## customers\n\n")
    assert "| id | name | address.city | address.zip | tags | orders | active | score |" in markdown
    assert (
        '| 3 | Customer 3 | Zürich | null | vip, b2b | [{"sku":"SKU-3","quantity":2}] |' in markdown
    )
    # No row cap: the last record is there too.
    assert "| 2499 | Customer 2499 |" in markdown
    assert "Only the first" not in markdown


def test_nested_values_are_a_nested_list_with_scalar_arrays_on_one_line() -> None:
    data = b'{"config": {"name": "edge <b>", "ports": [80, 443], "limits": [[1, 2], [3, 4]],'
    data += b' "rules": [{"allow": true}, "deny\\nall"], "empty": {}}}'
    markdown = extract(data, kind="json").markdown
    assert markdown == (
        "## config\n\n"
        "- **name**: edge \\<b>\n"
        "- **ports**: 80, 443\n"
        "- **limits**:\n  - 1, 2\n  - 3, 4\n"
        "- **rules**:\n  - (1)\n    - **allow**: true\n  - deny all\n"
        "- **empty**: {}\n"
    )


def test_large_json_is_an_outline_of_compact_lines_no_bigger_than_the_input() -> None:
    items = records(12_000)
    data = json.dumps({"source": "crm", "customers": items}, indent=1).encode()
    assert len(data) > OUTLINE_FROM_BYTES
    markdown = extract_bounded(data, kind="json").markdown
    assert markdown.startswith("- **source**: crm\n\n## customers\n\n{")
    lines = markdown.split("## customers\n\n", 1)[1].splitlines()
    assert len(lines) == 12_000
    assert json.loads(lines[11_999]) == items[11_999]
    assert len(markdown.encode()) <= len(data)


def test_large_json_still_escapes_html_and_drops_control_characters() -> None:
    filler = [{"n": number, "text": "x" * 200} for number in range(6_000)]
    data = json.dumps({"note": "<script>alert(1)</script>\u0007", "rows": filler}).encode()
    assert len(data) > OUTLINE_FROM_BYTES
    markdown = extract(data, kind="json").markdown
    assert "- **note**: \\<script>alert(1)\\</script>\n" in markdown


@pytest.mark.parametrize(
    "data",
    [
        '{"name": "café"}'.encode("utf-16"),  # another encoding, with its BOM
        b'\xef\xbb\xbf{"name": "caf\xc3\xa9"}',  # UTF-8 with a BOM
        b'{"name": "caf\\u00e9", "ratio": NaN}',  # NaN: not JSON, but Python writes it
    ],
    ids=["utf-16", "utf-8-bom", "nan"],
)
def test_json_that_orjson_refuses_is_read_the_slow_way(data: bytes) -> None:
    assert "- **name**: café" in extract(data, kind="json").markdown


def test_invalid_json_says_where() -> None:
    with pytest.raises(ExtractionFailed, match=r"line 2, column 7"):
        extract(b'{"a": 1,\n "b": tru}', kind="json")


# --- Large files: the outline, checked by rebuilding the JSON from it ----------------------


def shape(name: str, megabytes: float) -> Any:
    """A JSON value of about ``megabytes`` (pretty-printed) of one of the benchmark's shapes.

    Keys hold no ".", "[" or "*", so the test can read paths back.
    """
    random = Random(11)

    def words(count: int) -> str:
        return " ".join(random.choice(WORDS) for _ in range(count))

    def tree(depth: int) -> Any:
        if depth == 0:
            return random.choice([words(4), random.randint(0, 10**6), True, None, 2.5])
        kind = random.random()
        if kind < 0.5:
            return {f"{random.choice(WORDS)}_{i}": tree(depth - 1) for i in range(4)}
        if kind < 0.8:
            return [tree(depth - 1) for _ in range(4)]
        return words(6)

    count = int(megabytes * {"records": 3_500, "geojson": 420, "tree": 23, "matrix": 2_400}[name])
    if name == "records":
        return {
            "exported_at": "2026-01-31",
            "customers": [
                {
                    "id": number,
                    "name": words(2),
                    "address": {"street": words(3), "city": random.choice(WORDS), "zip": None},
                    "tags": [random.choice(WORDS) for _ in range(random.randint(0, 3))],
                    "orders": [{"sku": f"SKU-{number}", "quantity": 2}] * random.randint(0, 2),
                    "score": number / 8,
                }
                for number in range(count)
            ],
        }
    if name == "geojson":
        return {
            "type": "FeatureCollection",
            "features": [
                {
                    "type": "Feature",
                    "properties": {"name": words(2), "population": number * 7},
                    "geometry": {
                        "type": "Polygon",
                        # Every tenth feature is too long for one line (a big polygon).
                        "coordinates": [
                            [[round(random.uniform(-180, 180), 6), 1.5]]
                            * (400 if number % 10 == 0 else 8)
                        ],
                    },
                }
                for number in range(count)
            ],
        }
    if name == "tree":
        return {f"section_{number}": tree(6) for number in range(count)}
    return [[random.randint(-(10**6), 10**6) for _ in range(40)] for _ in range(count)]


_PATH_LINE = re.compile(r"- \*\*(.+?)\*\*: (.*)")
_SEGMENT = re.compile(r"\[(\d+)\]|\.?([^.\[]+)")


def rebuilt(markdown: str) -> Any:
    """The JSON value an outline stands for: top-level ``- **key**: value`` items (their
    values as text), ``## key`` sections of bare JSON lines (array items) and
    ``- **path**: <JSON>`` lines."""
    blocks = markdown.strip("\n").split("\n\n")
    if not blocks[0].startswith(("## ", "- **")):  # a top-level array: no sections
        return _rebuilt_section(blocks[0].splitlines())
    top: dict[str, Any] = {}
    index = 0
    while index < len(blocks):
        if blocks[index].startswith("## "):
            top[blocks[index][3:]] = _rebuilt_section(blocks[index + 1].splitlines())
            index += 2
            continue
        for line in blocks[index].splitlines():
            key, value = _PATH_LINE.fullmatch(line).groups()  # type: ignore[union-attr]
            top[key] = value
        index += 1
    return top


def _rebuilt_section(lines: list[str]) -> Any:
    root: dict[str, Any] = {}  # the section is root["value"]
    for line in filter(None, lines):
        match = _PATH_LINE.fullmatch(line)
        if match is None:  # an array item
            root.setdefault("value", []).append(json.loads(line))
            continue
        path, value = match.groups()
        segments = [int(index) if index else key for index, key in _SEGMENT.findall(path)]
        if "value" not in root:
            root["value"] = [] if isinstance(segments[0], int) else {}
        node: Any = root["value"]
        for segment, following in zip(segments, [*segments[1:], None], strict=True):
            child = (
                json.loads(value) if following is None else ([] if type(following) is int else {})
            )
            if isinstance(node, list):
                if segment == len(node):
                    node.append(child)
            elif segment not in node:
                node[segment] = child
            node = node[segment]
    return root["value"]


@pytest.mark.parametrize("name", ["records", "geojson", "tree", "matrix"])
def test_large_json_keeps_every_value_at_its_key_path_and_is_no_bigger_than_the_input(
    name: str,
) -> None:
    value = shape(name, 3)
    data = json.dumps(value, ensure_ascii=False, indent=1).encode()
    assert len(data) > 2 * 1024 * 1024
    markdown = extract_bounded(data, kind="json").markdown
    assert len(markdown.encode()) <= len(data)
    # Top-level scalars are written as text (all strings here), the rest as JSON.
    assert rebuilt(markdown) == value


def test_large_json_splits_long_values_into_lines_under_their_key_paths() -> None:
    value = shape("tree", 2)
    data = json.dumps(value, ensure_ascii=False, indent=2).encode()
    markdown = extract(data, kind="json").markdown
    lines = markdown.splitlines()
    # Values longer than a line are written member by member, each under its full path...
    deep = [line for line in lines if line.startswith("- **") and line.count(".") >= 2]
    assert len(deep) > 100
    # ...so no line is much longer than the limit unless it is one value (a long string or a
    # list of scalars) that splitting would not help.
    for line in lines:
        if len(line.encode()) > LINE_LIMIT + 200:
            payload = json.loads(_PATH_LINE.fullmatch(line).group(2))  # type: ignore[union-attr]
            assert not isinstance(payload, dict)
    # A chunk of search starts with the path of what it holds.
    chunks = chunk_markdown(markdown)
    assert sum(chunk.text.startswith("- **") for chunk in chunks) > len(chunks) / 2


def test_large_json_finds_a_nested_fact_next_to_its_key() -> None:
    customers = [
        {"id": number, "address": {"city": "Paris" if number == 4_321 else "Lyon"}}
        for number in range(40_000)
    ]
    data = json.dumps({"customers": customers}, indent=2).encode()
    markdown = extract(data, kind="json").markdown
    assert '{"id":4321,"address":{"city":"Paris"}}\n' in markdown


def test_large_json_with_ascii_escapes_is_written_as_the_characters() -> None:
    # json.dumps escapes every non-ASCII character by default: the outline must still be
    # searchable for "Zürich", and keep the escapes a JSON line needs.
    rows = [
        {"n": n, "city": "Zürich 東京 😀", "quote": 'say "hi"\\ \u0007 \\u00e9', "url": "a/b"}
        for n in range(15_000)
    ]
    data = json.dumps({"rows": rows}).replace("a/b", "a\\/b").encode()
    assert data.isascii()
    assert len(data) > OUTLINE_FROM_BYTES
    markdown = extract(data, kind="json").markdown
    line = markdown.splitlines()[2]
    assert line == (
        '{"n":0,"city":"Zürich 東京 😀","quote":"say \\"hi\\"\\\\ \\u0007 \\\\u00e9","url":"a/b"}'
    )
    assert json.loads(line) == {**rows[0], "url": "a/b"}
    assert len(markdown.encode()) <= len(data)


def test_minified_large_json_of_short_members_is_no_bigger_than_the_input() -> None:
    data = json.dumps({"flags": {f"f{n}": n % 2 == 0 for n in range(200_000)}}).encode()
    data = data.replace(b", ", b",").replace(b": ", b":")
    assert len(data) > OUTLINE_FROM_BYTES
    markdown = extract(data, kind="json").markdown
    assert len(markdown.encode()) <= len(data)
    assert '"f199999":false\n' in markdown


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf" + json.dumps({"name": "café", "rows": list(range(ROWS))}).encode(),
        json.dumps({"name": "café", "rows": list(range(ROWS)), "ratio": float("nan")}).encode(),
    ],
    ids=["utf-8-bom", "nan"],
)
def test_large_json_that_msgspec_refuses_is_read_the_slow_way(data: bytes) -> None:
    assert len(data) > OUTLINE_FROM_BYTES
    markdown = extract(data, kind="json").markdown
    assert "- **name**: café\n" in markdown
    assert str(ROWS - 1) in markdown


def test_large_invalid_json_says_where() -> None:
    data = json.dumps({"rows": list(range(ROWS))}, indent=1).encode()[:-3] + b"x]}"
    assert len(data) > OUTLINE_FROM_BYTES
    with pytest.raises(ExtractionFailed, match=rf"line {ROWS + 3}, column 2"):
        extract(data, kind="json")


@pytest.mark.parametrize("broken", [b"1 2", b"tr ue", b"- 1", b"1 .5"])
def test_large_json_with_whitespace_inside_a_number_or_word_says_where(broken: bytes) -> None:
    # Dropping that whitespace would make "12" or "true" of it: invalid JSON must stay so.
    data = json.dumps({"rows": list(range(ROWS))}, indent=1).encode()[:-3] + b"," + broken
    data += b"]}"
    assert len(data) > OUTLINE_FROM_BYTES
    with pytest.raises(
        ExtractionFailed, match=rf"invalid or truncated \(error at line {ROWS + 3}, "
    ):
        extract(data, kind="json")


def test_large_json_keeps_coordinates_on_one_line_and_properties_on_their_own() -> None:
    ring = [[round(n / 7, 6), -1.5] for n in range(500)]
    features = [
        {
            "type": "Feature",
            "properties": {"name": f"parcel {n}"},
            "geometry": {"type": "Polygon", "coordinates": [ring]},
        }
        for n in range(200)
    ]
    data = json.dumps({"type": "FeatureCollection", "features": features}, indent=2).encode()
    assert len(data) > OUTLINE_FROM_BYTES
    lines = extract(data, kind="json").markdown.splitlines()
    assert '- **[7].properties**: {"name":"parcel 7"}' in lines
    coordinates = [line for line in lines if line.startswith("- **[7].geometry.coordinates")]
    assert coordinates == [
        f"- **[7].geometry.coordinates**: {json.dumps([ring], separators=(',', ':'))}"
    ]


def test_deeply_nested_large_json_is_split_to_a_bounded_depth() -> None:
    value: Any = {"text": "word " * 1_000}
    for level in range(400):
        value = {f"level_{level}": value, "padding": "x" * 3_000}
    data = json.dumps(value, indent=1).encode()
    assert len(data) > OUTLINE_FROM_BYTES
    markdown = extract_bounded(data, kind="json").markdown
    assert max(line.count(".") for line in markdown.splitlines()) == 16
    assert markdown.count("x" * 3_000) == 400
    assert "word word" in markdown


def test_large_json_keeps_members_whose_keys_read_the_same_once_cleaned() -> None:
    data = json.dumps({"s": {"a\u0007": 1, "a": 2}, "rows": list(range(ROWS))}).encode()
    assert len(data) > OUTLINE_FROM_BYTES
    assert "## s\n\n- **a**: 1\n- **a**: 2\n" in extract(data, kind="json").markdown


# --- Files escaped to ASCII (json.dumps's default): the same outline as written unescaped ---


def _outline_of(value: Any, *, ensure_ascii: bool, indent: int | None = None) -> str:
    data = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent).encode()
    assert len(data) > OUTLINE_FROM_BYTES
    return extract(data, kind="json").markdown


@pytest.mark.parametrize("name", ["records", "geojson", "tree", "matrix"])
def test_large_json_escaped_to_ascii_has_the_outline_of_the_unescaped_file(name: str) -> None:
    value = shape(name, 1.5)
    escaped = _outline_of(value, ensure_ascii=True, indent=1)
    assert escaped == _outline_of(value, ensure_ascii=False, indent=1)
    assert rebuilt(escaped) == value


def _rows(row: dict[str, Any], count: int = 30_000) -> dict[str, Any]:
    return {"title": "Zürich", "rows": [{"n": n, **row} for n in range(count)]}


@pytest.mark.parametrize(
    "row",
    [
        {"city": "Zürich 東京 Привет", "word": "café"},
        {"emoji": "😀 and 👩‍💻", "flag": "🇨🇭", "😀 key": 1},  # surrogate pairs
        {"path": "C:\\users\\u00e9\\new", "end": "\\"},  # a backslash before "u00e9"
        {"quote": 'say "hi" \\"', "tab": "a\tb\nc"},
        {"control": "bell \u0007 unit \u001f nul \u0000 end"},
        {"Zürich 東京": 1, "C:\\users": 2, "naïve\\u00e9": 3, "\\": 4},  # keys
        {"html": "<b>café</b> <!-- x -->"},  # then escaped for markdown
        {"ligature": "ﬁne café"},  # a presentation form, read as the letters
    ],
    ids=["letters", "emoji", "backslashes", "quotes", "controls", "keys", "html", "ligature"],
)
def test_large_json_escaped_to_ascii_reads_each_escape_as_json_does(row: dict[str, Any]) -> None:
    value = _rows(row)
    escaped = _outline_of(value, ensure_ascii=True)
    assert escaped == _outline_of(value, ensure_ascii=False)
    assert escaped.startswith("- **title**: Zürich\n\n## rows\n\n")


@pytest.mark.parametrize(
    ("row", "split_lines"),
    [
        # Escaped, each of these strings is longer than a line; decoded, none is: only the
        # records are split. (The indented scores leave room for the paths of the split.)
        (
            {"city": "東京 " * 400, "tags": ["Привет " * 300] * 3, "scores": list(range(300))},
            ['- **[7].city**: "東京 東京', '- **[7].tags[2]**: "Привет Привет'],
        ),
        # Surrogate pairs are decoded one half at a time: joined in long values, split lines
        # and the rest alike.
        (
            {
                "mood": "😀 東京 " * 700,
                "tags": ["👍 Привет " * 250] * 3,
                "scores": list(range(300)),
            },
            ['- **[7].tags[2]**: "👍 Привет'],
        ),
    ],
    ids=["letters", "emoji"],
)
def test_large_json_escaped_to_ascii_splits_long_values_as_unescaped(
    row: dict, split_lines: list[str]
) -> None:
    value = _rows(row, count=100)
    escaped = _outline_of(value, ensure_ascii=True, indent=2)
    assert escaped == _outline_of(value, ensure_ascii=False, indent=2)
    for line in split_lines:
        assert line in escaped


def test_large_json_escaped_to_ascii_with_a_few_long_values_among_short_ones() -> None:
    value = _rows({"city": "Zürich 東京", "note": "Привет 😀"})
    for row in value["rows"][::5_000]:  # one record in 5,000 is split
        row["tags"] = ["東京 👍 " * 300] * 4
    escaped = _outline_of(value, ensure_ascii=True, indent=1)
    assert escaped == _outline_of(value, ensure_ascii=False, indent=1)
    assert '- **[5000].tags[3]**: "東京 👍 東京' in escaped
    assert '{"n":5001,"city":"Zürich 東京","note":"Привет 😀"}\n' in escaped


def test_large_json_escaped_to_ascii_splits_no_more_than_the_whitespace_allows() -> None:
    # Minified: the whitespace saved is a few spaces per record, so most records stay whole.
    # What decoding the escapes saves is not spent on paths: the escaped file is split as
    # the unescaped one.
    value = _rows({"city": "東京 " * 400, "tags": ["Привет " * 300] * 3}, count=300)
    escaped = _outline_of(value, ensure_ascii=True)
    assert escaped == _outline_of(value, ensure_ascii=False)
    assert "- **[0].city**: " in escaped
    assert '{"n":299,"city":"東京' in escaped


def test_large_json_escaped_to_ascii_with_keys_holding_sections() -> None:
    value = {
        "naïve \\ Zürich": "東京 \\u00e9",
        "東京 Zürich": [{"n": n, "city": "Zürich"} for n in range(40_000)],
        "C:\\data\\": {f"k\\{n}é": "北京" for n in range(5)},
    }
    escaped = _outline_of(value, ensure_ascii=True)
    assert escaped == _outline_of(value, ensure_ascii=False)
    assert escaped.startswith("- **naïve \\ Zürich**: 東京 \\u00e9\n\n## 東京 Zürich\n\n")
    assert '## C:\\data\\\n\n- **k\\0é**: "北京"\n' in escaped


def test_large_json_with_raw_utf8_and_ascii_escapes_mixed() -> None:
    value = _rows({"city": "Zürich 東京 😀", "path": "C:\\u00e9"})
    unescaped = json.dumps(value, ensure_ascii=False)
    # The first half of the file as json.dumps escapes it, the rest as written.
    half = unescaped.index('{"n": 3000')
    mixed = (json.dumps(value)[: json.dumps(value).index('{"n": 3000')] + unescaped[half:]).encode()
    assert not mixed.isascii() and b"\\u6771" in mixed
    assert extract(mixed, kind="json").markdown == _outline_of(value, ensure_ascii=False)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (b"\\/", "/"),  # an escaped solidus is just "/"
        (b"\\\\/ \\/", "\\\\/ /"),  # an escaped backslash, then "/"; a solidus
        (b"\\\\u0007", "\\\\u0007"),  # an escaped backslash, then "u0007"
        (b"\\u003cb>", "\\<b>"),  # "<", then escaped for markdown
        (b"\\u0041\\u00e9", "Aé"),  # visible characters, ASCII or not
        (b"\\u0022", "\\u0022"),  # a quote stays escaped, as JSON needs
        (b"\\u005c", "\\u005c"),  # a backslash too
        (b"\\u005cu00e9", "\\u005cu00e9"),  # an escaped backslash, then "u00e9"
        (b"\\\\\\u00e9", "\\\\é"),  # a backslash, then an escaped "é"
        (b"\\u0007", "\\u0007"),  # control characters stay escaped
        (b"\\u007f", "\\u007f"),
        (b"\\u0085", "\\u0085"),
        (b"\\ud83d\\ude00", "😀"),  # a surrogate pair is one character
    ],
    ids=lambda param: param.decode() if isinstance(param, bytes) else None,
)
def test_large_json_hand_written_escapes_are_read_as_json_reads_them(
    written: bytes, read: str
) -> None:
    line = b'{"n":1,"text":"a ' + written + b' z","Z\\u00fcrich":"\\u00fc"}'
    data = b'{"rows":[' + b",".join([line] * 30_000) + b"]}"
    assert len(data) > OUTLINE_FROM_BYTES
    lines = extract(data, kind="json").markdown.splitlines()
    assert lines[:2] == ["## rows", ""]
    assert set(lines[2:]) == {'{"n":1,"text":"a ' + read + ' z","Zürich":"ü"}'}
    if read != "\\<b>":
        assert json.loads(lines[2])["text"] == json.loads(line)["text"]


def test_wide_records_are_written_with_each_value_beside_its_key() -> None:
    # An export of records whose one meaningful value hides among ids, hashes and dates: as a
    # table, the value sits rows away from the header that names it (issue 37).
    records = [
        {
            "type": "NarrativeText",
            "element_id": f"{index:032x}",
            "text": f"Paragraph {index} of the page",
            "metadata": {
                "filetype": "text/html",
                "languages": ["eng"],
                "page_number": 1,
                "url": "abfs://container1/page.html",
                "date_created": "1678441216.0",
                "date_modified": "1678441216.0",
            },
        }
        for index in range(3)
    ]
    markdown = extract_json(json.dumps(records).encode()).markdown
    assert "|" not in markdown
    lines = markdown.strip().splitlines()
    assert len(lines) == 3
    assert lines[1] == (
        "- **type**: NarrativeText · **element_id**: 00000000000000000000000000000001 · "
        "**text**: Paragraph 1 of the page · **metadata.filetype**: text/html · "
        "**metadata.languages**: eng · **metadata.page_number**: 1 · "
        "**metadata.url**: abfs://container1/page.html · "
        "**metadata.date_created**: 1678441216.0 · **metadata.date_modified**: 1678441216.0"
    )
