"""compact_json, the first step of the large JSON outline: the whitespace between tokens
dropped and the escapes of visible characters decoded, everything else kept, so the result
reads as the same JSON; None for invalid JSON and for strings that are not UTF-8."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.knowledge.extraction.json_outline import compact_json
from tests.examples import examples

pytestmark = pytest.mark.smoke

# Text of every plane but DEL and the C1 controls, which stay escaped in the file json.dumps
# escapes to ASCII and are raw in the other.
TEXT = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters=[*map(chr, range(0x7F, 0xA0))])
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(TEXT, children, max_size=6),
    max_leaves=40,
)


@given(value=JSON_VALUES, indent=st.sampled_from([None, 0, 1, 4, "\t"]))
@settings(max_examples=examples(300), deadline=None)
def test_escaped_and_indented_json_compacts_to_the_unescaped_compact_json(
    value: Any, indent: int | str | None
) -> None:
    escaped = json.dumps(value, ensure_ascii=True, indent=indent).encode()
    compacted = compact_json(escaped)
    assert compacted is not None
    compact, dropped = compacted
    assert compact == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert json.loads(compact) == value
    # Only whitespace counts as dropped, not what decoding the escapes saved.
    assert dropped == len(escaped) - len(json.dumps(value, separators=(",", ":")).encode())


@pytest.mark.parametrize(
    ("written", "compacted"),
    [
        (rb'"\/"', b'"/"'),
        (rb'"\\/"', rb'"\\/"'),  # an escaped backslash, then "/"
        (rb'"\\u00e9"', rb'"\\u00e9"'),  # an escaped backslash, then "u00e9"
        (rb'"\\\u00e9"', b'"\\\\\xc3\xa9"'),  # an escaped backslash, then an escaped "é"
        (rb'"\\\\\u00e9"', b'"\\\\\\\\\xc3\xa9"'),  # two escaped backslashes, then "é"
        (rb'"\u0041\u00E9\u6771"', '"Aé東"'.encode()),
        (rb'"\ud83d\ude00"', '"😀"'.encode()),
        (rb'"\ud83d\ude00\u00e9\/"', '"😀é/"'.encode()),  # one run of escapes
        (rb'"\u0022 \u005c \u005C \" \\ \n \t"', rb'"\u0022 \u005c \u005C \" \\ \n \t"'),
        (rb'"\u0000 \u001f \u007f \u0080 \u009f"', rb'"\u0000 \u001f \u007f \u0080 \u009f"'),
        # In one run, those that stay are kept as written, the others decoded.
        (rb'"\u00e9\u0007\u00E8\u005C\u00e7"', b'"\xc3\xa9\\u0007\xc3\xa8\\u005C\xc3\xa7"'),
        (rb'"\u00a0"', '"\u00a0"'.encode()),
        (rb'"\u2028"', '"\u2028"'.encode()),
        ('"Zürich \\u00fc"'.encode(), '"Zürich ü"'.encode()),  # raw UTF-8 and escapes mixed
        (
            b' { "a" : [ 1 , 2.5E+3 , true, 1.50 ] ,\r\n\t"b" : null } ',
            b'{"a":[1,2.5E+3,true,1.50],"b":null}',
        ),
        (b'"  spaces  kept  "', b'"  spaces  kept  "'),
        (b'"\x7f \xc2\x85 raw controls kept"', b'"\x7f \xc2\x85 raw controls kept"'),
    ],
)
def test_compaction_decodes_visible_escapes_and_keeps_the_rest(
    written: bytes, compacted: bytes
) -> None:
    result = compact_json(written)
    assert result is not None
    assert result[0] == compacted


@pytest.mark.parametrize(
    "invalid",
    [
        rb'["\ud800"]',  # a lone high surrogate
        rb'["\ud800\u0041"]',  # a high surrogate, then something else
        rb'["\udc00"]',  # a lone low surrogate
        rb'["\u12"]',  # too few hex digits
        rb'["\u12g4"]',
        rb'["\q"]',
        b'["a\\',  # a backslash that ends the input
        b'["unterminated',
        b"",
        b"[NaN]",
        b"\xef\xbb\xbf[1]",  # a BOM
        b"[" * 100_000 + b"]" * 100_000,  # deeper than msgspec reads
    ],
)
def test_invalid_json_gives_none(invalid: bytes) -> None:
    assert compact_json(invalid) is None


@pytest.mark.parametrize(
    "broken", [b"[1 2]", b"[tr ue]", b"[- 1]", b"[1 .5]", b"[1e \n 5]", b"[nu\tll]"]
)
def test_whitespace_inside_a_number_or_word_is_invalid_not_dropped(broken: bytes) -> None:
    # Dropping it would make "[12]" or "[true]" of it: the slow path says where the error is.
    assert compact_json(broken) is None
    assert compact_json(b"[1 , 2]") == (b"[1,2]", 2)


@pytest.mark.parametrize(
    "not_utf8",
    [
        b"caf\xe9",  # Latin-1
        b"\x80",  # a continuation byte alone
        b"\xc0\x80",  # an overlong NUL
        b"\xe0\x80\x80",  # an overlong three-byte form
        b"\xed\xa0\x80",  # a surrogate
        b"\xf4\x90\x80\x80",  # past U+10FFFF
        b"\xf5\x80\x80\x80",
        b"\xe2\x82",  # cut short by the closing quote
        b"\xe2\x82\x28",
        b"\\u00e9 \xff",  # after an escape
    ],
)
def test_a_string_that_is_not_utf8_gives_none(not_utf8: bytes) -> None:
    assert compact_json(b'{"a": ["ok", "' + not_utf8 + b'"]}') is None


@given(body=st.binary(max_size=64))
@settings(max_examples=examples(300), deadline=None)
def test_strings_are_accepted_exactly_when_python_decodes_them(body: bytes) -> None:
    body = body.replace(b'"', b"").replace(b"\\", b"")
    data = b'["' + body + b'"]'
    try:
        text = body.decode()
    except UnicodeDecodeError:
        assert compact_json(data) is None
    else:
        if any(character < " " for character in text):  # raw C0 controls: invalid JSON
            assert compact_json(data) is None
        else:
            assert compact_json(data) == (data, 0)


JSONISH_BYTES = st.lists(
    st.sampled_from(
        [b"{", b"}", b"[", b"]", b'"', b"\\", b":", b",", b" ", b"\n", b"1", b"true"]
        + [b"\\u", b"00e9", b"d83d", b"\\ude00", b"0022", b"007f", b"\\/", b"\\\\", b"\xc3\xa9"]
    )
    | st.binary(max_size=4),
    max_size=40,
).map(b"".join)


@given(data=JSONISH_BYTES)
@settings(max_examples=examples(500), deadline=None)
def test_any_bytes_compact_to_the_same_value_or_to_none(data: bytes) -> None:
    # Hostile uploads reach compact_json as they are: whatever it accepts reads as the JSON
    # it was given, and is no longer.
    compacted = compact_json(data)
    if compacted is None:
        return
    compact, dropped = compacted
    assert json.loads(compact) == json.loads(data)
    assert len(compact) <= len(data) - dropped
    assert compact_json(compact) == (compact, 0)  # compact already: nothing left to do
