"""JSON: readable tables and lists for ordinary files, an outline of compact JSON lines for
large ones, every item kept, never bigger than the input."""

from __future__ import annotations

import json

import pytest

from apps.knowledge.extraction import ExtractionFailed, extract, extract_bounded
from apps.knowledge.extraction.tabular import OUTLINE_FROM_BYTES


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
