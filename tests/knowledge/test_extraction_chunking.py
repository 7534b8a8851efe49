"""chunk_markdown: sections by heading, then size; never empty, never over max_chars."""

from __future__ import annotations

import time

import pytest

from apps.knowledge.extraction import chunk_markdown


def words(text: str) -> list[str]:
    return text.split()


def test_chunks_follow_headings_with_their_enclosing_path() -> None:
    markdown = (
        "Preamble before any heading.\n\n"
        "# Guide\n\nIntro to the guide.\n\n"
        "## Install\n\nRun the installer.\n\n"
        "### Linux\n\nUse the package.\n\n"
        "## Use\n\nOpen the app.\n"
    )
    chunks = chunk_markdown(markdown)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ([], "Preamble before any heading."),
        (["Guide"], "# Guide\n\nIntro to the guide."),
        (["Guide", "Install"], "## Install\n\nRun the installer."),
        (["Guide", "Install", "Linux"], "### Linux\n\nUse the package."),
        (["Guide", "Use"], "## Use\n\nOpen the app."),
    ]
    assert [c.position for c in chunks] == [0, 1, 2, 3, 4]


def test_a_heading_without_body_gives_no_chunk_but_stays_in_the_path() -> None:
    chunks = chunk_markdown("# Title\n\n## Part\n\nText of the part.\n\n## Empty\n\n")
    assert [(c.heading_path, c.text) for c in chunks] == [
        (["Title", "Part"], "## Part\n\nText of the part.")
    ]


def test_no_empty_chunks_from_blank_input() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("\n\n   \n") == []
    assert chunk_markdown("# Only a heading\n") == []


def test_long_section_splits_on_paragraph_boundaries_under_max_chars() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 40 for i in range(30)]
    markdown = "## Long\n\n" + "\n\n".join(p.strip() for p in paragraphs)
    chunks = chunk_markdown(markdown, max_chars=600)
    assert len(chunks) > 5
    assert all(len(c.text) <= 600 for c in chunks)
    assert all(c.heading_path == ["Long"] for c in chunks)
    # Every paragraph sits whole in one chunk, and nothing is lost or repeated.
    for paragraph in paragraphs:
        assert sum(paragraph.strip() in c.text for c in chunks) == 1
    assert words(" ".join(c.text for c in chunks)) == words(markdown)


def test_a_table_that_fits_stays_whole() -> None:
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * 2} |" for i in range(20))
    markdown = "## Data\n\n" + "x " * 300 + "\n\n" + table + "\n\nAfter the table."
    chunks = chunk_markdown(markdown, max_chars=700)
    assert sum(table in c.text for c in chunks) == 1


def test_a_table_too_long_is_split_by_rows_repeating_its_header() -> None:
    rows = [f"| row {i} | value {i} |" for i in range(200)]
    table = "| name | value |\n|---|---|\n" + "\n".join(rows)
    chunks = chunk_markdown(table, max_chars=500)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.text.startswith("| name | value |\n|---|---|\n")
        assert len(chunk.text) <= 500
    found = [line for c in chunks for line in c.text.split("\n")[2:]]
    assert found == rows


def test_hashes_inside_code_blocks_are_not_headings() -> None:
    markdown = "# Setup\n\n```bash\n# install it\npip install x\n```\n\nDone.\n"
    chunks = chunk_markdown(markdown)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ["Setup"]
    assert "# install it" in chunks[0].text


def test_a_long_code_block_is_split_and_each_piece_is_fenced() -> None:
    code = "\n".join(f"print({i})" for i in range(300))
    chunks = chunk_markdown(f"```python\n{code}\n```", max_chars=400)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("```python\n") and chunk.text.endswith("\n```")
        assert len(chunk.text) <= 400


def test_setext_headings_are_headings() -> None:
    chunks = chunk_markdown("Title\n=====\n\nIntro.\n\nPart\n----\n\nBody.\n")
    assert [(c.heading_path, c.text) for c in chunks] == [
        (["Title"], "# Title\n\nIntro."),
        (["Title", "Part"], "## Part\n\nBody."),
    ]


def test_a_line_without_spaces_is_cut_hard() -> None:
    text = "人人生而自由，在尊严和权利上一律平等。" * 200
    chunks = chunk_markdown(text, max_chars=300)
    assert all(0 < len(c.text) <= 300 for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_long_sentences_split_at_sentence_ends_first() -> None:
    sentences = [f"Sentence number {i} says something useful." for i in range(100)]
    chunks = chunk_markdown(" ".join(sentences), max_chars=300)
    assert all(len(c.text) <= 300 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)


def test_page_sections_of_a_pdf_become_chunk_paths() -> None:
    chunks = chunk_markdown("## Page 1\n\nFirst page text.\n\n## Page 2\n\nSecond page text.\n")
    assert [c.heading_path for c in chunks] == [["Page 1"], ["Page 2"]]


@pytest.mark.parametrize(
    "markdown",
    [
        # Shapes that made the former heading and table-separator regexes backtrack
        # quadratically (8,000 characters took seconds; these would take an hour).
        "# a" + " \t" * 100_000 + "b\n\nbody",
        "\n" + " " * 200_000 + "y\n---\n",
        "|" + " " * 200_000 + "x",
        "| " + "header | " * 2_000 + "\n|---|\n| a | b |\n",
        "```" + "x" * 10_000 + "\ncode\n```",
    ],
)
def test_hostile_lines_are_chunked_quickly_and_within_limits(markdown: str) -> None:
    started = time.monotonic()
    chunks = chunk_markdown(markdown, max_chars=500)
    assert time.monotonic() - started < 1
    assert chunks and all(0 < len(c.text) <= 500 for c in chunks)


def test_max_chars_must_leave_room_for_text() -> None:
    with pytest.raises(ValueError):
        chunk_markdown("text", max_chars=10)


# RFC 2616's layout: numbered plain-text titles, each heading a short definition (issue 37).
RFC_STATUS_CODES = """10.4 Client Error 4xx

The 4xx class of status code is intended for cases in which the client seems to have erred.

10.4.1 400 Bad Request

   The request could not be understood by the server due to malformed syntax. The client
   SHOULD NOT repeat the request without modifications.

10.4.2 401 Unauthorized

   The request requires user authentication. The response MUST include a WWW-Authenticate
   header field containing a challenge applicable to the requested resource. The client MAY
   repeat the request with a suitable Authorization header field.

10.4.3 402 Payment Required

   This code is reserved for future use.

10.4.4 403 Forbidden

   The server understood the request, but is refusing to fulfill it. Authorization will not
   help and the request SHOULD NOT be repeated. If the request method was not HEAD and the
   server wishes to make public why the request has not been fulfilled, it SHOULD describe the
   reason for the refusal in the entity.

10.4.5 404 Not Found

   The server has not found anything matching the Request-URI. No indication is given of
   whether the condition is temporary or permanent. The 410 (Gone) status code SHOULD be used
   if the server knows that an old resource is permanently unavailable.

10.4.6 405 Method Not Allowed

   The method specified in the Request-Line is not allowed for the resource identified by the
   Request-URI. The response MUST include an Allow header containing a list of valid methods.

10.4.7 406 Not Acceptable

   The resource identified by the request is only capable of generating response entities
   which have content characteristics not acceptable according to the accept headers sent in
   the request.

10.4.8 407 Proxy Authentication Required

   This code is similar to 401 (Unauthorized), but indicates that the client must first
   authenticate itself with the proxy. The proxy MUST return a Proxy-Authenticate header field
   containing a challenge applicable to the proxy for the requested resource.
"""


def test_a_plain_text_title_starts_the_passage_of_the_text_it_heads() -> None:
    assert len(RFC_STATUS_CODES) > 1800
    for max_chars in (450, 600, 900, 1800):
        chunks = chunk_markdown(RFC_STATUS_CODES, max_chars=max_chars)
        for chunk in chunks:
            last = chunk.text.rsplit("\n\n", 1)[-1].strip()
            assert not last.startswith("10.4."), (max_chars, chunk.text)
        for title in ("10.4.4 403 Forbidden", "10.4.5 404 Not Found", "10.4.6 405 Method"):
            holder = next(chunk for chunk in chunks if title in chunk.text)
            assert holder.text.startswith(title), (max_chars, holder.text)
        # Nothing lost or repeated.
        assert words(" ".join(c.text for c in chunks)) == words(RFC_STATUS_CODES)


def test_short_definitions_over_the_size_are_one_passage_each() -> None:
    chunks = chunk_markdown(RFC_STATUS_CODES, max_chars=1800)
    definitions = [c for c in chunks if c.text.startswith("10.4.") and "xx" not in c.text[:20]]
    # Before, the text was two passages holding four or five definitions each.
    assert [c.text.split("\n", 1)[0] for c in definitions] == [
        "10.4.1 400 Bad Request",
        "10.4.2 401 Unauthorized",
        "10.4.3 402 Payment Required",
        "10.4.4 403 Forbidden",
        "10.4.5 404 Not Found",
        "10.4.6 405 Method Not Allowed",
        "10.4.7 406 Not Acceptable",
        "10.4.8 407 Proxy Authentication Required",
    ]


def test_a_short_text_with_titles_stays_one_passage() -> None:
    text = "1. Scope\n\nThis covers refunds.\n\n2. Terms\n\nA refund is money back.\n"
    assert [c.text for c in chunk_markdown(text)] == [text.strip()]


def test_a_long_list_of_short_definitions_splits_on_its_items() -> None:
    items = [f"- **Term {i}**: the meaning of term number {i} in a few words." for i in range(60)]
    chunks = chunk_markdown("## Glossary\n\n" + "\n".join(items), max_chars=1800)
    assert len(chunks) >= 6
    assert all(len(c.text) <= 1800 // 4 + 20 for c in chunks[1:])
    found = [line for c in chunks for line in c.text.split("\n") if line.startswith("- ")]
    assert found == items  # whole items, in order


def test_numbered_steps_and_references_are_not_titles() -> None:
    from apps.knowledge.extraction.chunking import is_title

    assert is_title("10.4.5 404 Not Found")
    assert is_title("**Payment terms**")
    assert is_title("GENERAL CONDITIONS")
    assert not is_title("2. open the box and take out the device")
    assert not is_title("1. Hugman, Barry J., ed. (2005). The PFA Footballers' Who's Who")
    assert not is_title("The server has not found anything.")


def test_base64_data_uris_are_replaced_by_a_placeholder() -> None:
    payload = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" * 40
    markdown = f"# Logo\n\nOur logo: ![logo](data:image/png;base64,{payload}) in blue.\n"
    chunks = chunk_markdown(markdown, max_chars=600)
    assert len(chunks) == 1
    assert chunks[0].text == "# Logo\n\nOur logo: ![logo](data:image/png;base64,…) in blue."
