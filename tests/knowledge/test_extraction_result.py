"""Extraction: markdown given as text or as UTF-8 bytes reads the same, and blank means what
str.isspace() says, without decoding bytes that start with something visible."""

from __future__ import annotations

import json
import pickle

import pytest

from apps.knowledge.extraction import Extraction, extract, extract_bounded
from apps.knowledge.extraction.json_outline import render_outline

pytestmark = pytest.mark.smoke


@pytest.mark.parametrize(
    ("markdown", "blank"),
    [
        ("", True),
        (" \n\t", True),
        ("\x1c\x1f \u3000\u2029", True),  # separators str.isspace() counts, ASCII or not
        ("  x", False),
        ("\u3000東京", False),
        ("\n\u00a0\n", True),
    ],
)
def test_blank_is_what_isspace_says_for_text_and_for_its_utf8(markdown: str, blank: bool) -> None:
    for given in (markdown, markdown.encode()):
        extraction = Extraction(markdown=given, page_count=None, title=None)
        assert extraction.is_blank() is blank
        assert extraction.markdown == markdown


def test_utf8_markdown_is_decoded_once_and_survives_a_pickle() -> None:
    extraction = Extraction(markdown="- **city**: Zürich\n".encode(), page_count=None, title=None)
    copy = pickle.loads(pickle.dumps(extraction))
    assert copy == Extraction(markdown="- **city**: Zürich\n", page_count=None, title=None)
    assert copy.markdown is copy.markdown  # decoded once, then kept


def test_large_json_outline_reads_the_same_in_the_process_and_bounded() -> None:
    rows = [{"id": number, "city": "Zürich" if number % 2 else "東京"} for number in range(60_000)]
    data = json.dumps({"rows": rows}, ensure_ascii=False).encode()
    assert isinstance(render_outline(data), bytes)  # the outline is handed on as UTF-8
    markdown = extract(data, kind="json").markdown
    assert markdown.startswith('## rows\n\n{"id":0,"city":"東京"}\n{"id":1,"city":"Zürich"}\n')
    assert extract_bounded(data, kind="json").markdown == markdown
