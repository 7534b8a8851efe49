"""console_native: compact_json drops whitespace and decodes the escapes of visible
characters, keeping everything else, so the result reads as the same JSON (None for strings
that are not UTF-8); split_json gives the members of compact JSON as msgspec does."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import msgspec
import pytest
from console_native import compact_json, split_json
from hypothesis import given, settings
from hypothesis import strategies as st

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
@settings(max_examples=400, deadline=None)
def test_escaped_and_indented_json_compacts_to_the_unescaped_compact_json(
    value: Any, indent: int | str | None
) -> None:
    escaped = json.dumps(value, ensure_ascii=True, indent=indent).encode()
    compact, dropped = compact_json(escaped)
    assert compact == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert json.loads(compact) == value
    # Only whitespace counts as dropped, not what decoding the escapes saved.
    assert dropped == len(escaped) - len(json.dumps(value, separators=(",", ":")).encode())


@pytest.mark.parametrize("offset", range(40))
def test_an_escape_at_any_offset_of_a_long_string_is_decoded(offset: int) -> None:
    # Strings are copied 16 bytes at a time: an escape on, before and after each boundary.
    text = "x" * offset + "é" + "y" * (40 - offset) + "😀" + '"' + "z" * offset
    compact, _ = compact_json(json.dumps([text, text], indent=2).encode())
    assert compact == json.dumps([text, text], ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    ("written", "compacted"),
    [
        (rb'"\/"', b'"/"'),
        (rb'"\\/"', rb'"\\/"'),  # an escaped backslash, then "/"
        (rb'"\\u00e9"', rb'"\\u00e9"'),  # an escaped backslash, then "u00e9"
        (rb'"\\\u00e9"', b'"\\\\\xc3\xa9"'),  # an escaped backslash, then an escaped "é"
        (rb'"\u0041\u00E9\u6771"', '"Aé東"'.encode()),
        (rb'"\ud83d\ude00"', '"😀"'.encode()),
        (rb'"\u0022 \u005c \u005C \" \\ \n \t"', rb'"\u0022 \u005c \u005C \" \\ \n \t"'),
        (rb'"\u0000 \u001f \u007f \u0080 \u009f"', rb'"\u0000 \u001f \u007f \u0080 \u009f"'),
        (rb'"\u00a0"', '"\u00a0"'.encode()),
        (rb'"\u2028"', '"\u2028"'.encode()),
        ('"Zürich \\u00fc"'.encode(), '"Zürich ü"'.encode()),  # raw UTF-8 and escapes mixed
        (b' { "a" : [ 1 , 2.5e3 , true ] ,\r\n\t"b" : null } ', b'{"a":[1,2.5e3,true],"b":null}'),
        (b'"  spaces  kept  "', b'"  spaces  kept  "'),
    ],
)
def test_compaction_decodes_visible_escapes_and_keeps_the_rest(
    written: bytes, compacted: bytes
) -> None:
    assert compact_json(written)[0] == compacted


@pytest.mark.parametrize(
    ("invalid", "compacted"),
    [
        (rb'["\ud800"]', None),  # a lone high surrogate
        (rb'["\ud800\u0041"]', rb'["\ud800A"]'),  # a high surrogate, then something else
        (rb'["\udc00"]', None),  # a lone low surrogate
        (rb'["\u12"]', None),  # too few hex digits
        (rb'["\u12g4"]', None),
        (rb'["\q"]', None),
        (b'["a\\', None),  # a backslash that ends the input
        (b'["unterminated', None),
    ],
)
def test_invalid_escapes_are_copied_as_they_are(invalid: bytes, compacted: bytes | None) -> None:
    compact, _ = compact_json(invalid)
    assert compact == (compacted or invalid)
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(compact)


@pytest.mark.parametrize(
    ("written", "compacted"),
    [
        (b"[1 2]", b"[1 2]"),
        (b"[tr ue]", b"[tr ue]"),
        (b"[- 1]", b"[- 1]"),
        (b"[1 .5]", b"[1 .5]"),
        (b"[1e \n 5]", b"[1e 5]"),
        (b"[nu\tll]", b"[nu ll]"),
        (b"[1 , 2]", b"[1,2]"),
    ],
)
def test_whitespace_inside_a_number_or_word_stays_so_the_json_stays_invalid(
    written: bytes, compacted: bytes
) -> None:
    assert compact_json(written)[0] == compacted


def test_any_bytes_like_object_is_read_and_the_result_is_bytes() -> None:
    data = b'{ "a" : "\\u00e9" }'
    for buffer in (data, bytearray(data), memoryview(data)):
        assert compact_json(buffer) == ('{"a":"é"}'.encode(), 4)
    assert compact_json(b"") == (b"", 0)
    with pytest.raises(TypeError):
        compact_json("text")  # type: ignore[arg-type]


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
        b"x" * 20 + b"\xff",  # past the first 16-byte block
    ],
)
def test_a_string_that_is_not_utf8_gives_none(not_utf8: bytes) -> None:
    assert compact_json(b'{"a": ["ok", "' + not_utf8 + b'"]}') is None


@given(body=st.binary(max_size=64), offset=st.integers(0, 40))
@settings(max_examples=400, deadline=None)
def test_strings_are_accepted_exactly_when_python_decodes_them(body: bytes, offset: int) -> None:
    body = b"x" * offset + body.replace(b'"', b"").replace(b"\\", b"")
    data = b'["' + body + b'"]'
    try:
        body.decode()
    except UnicodeDecodeError:
        assert compact_json(data) is None
    else:
        assert compact_json(data) == (data, 0)


CONTAINERS = st.lists(JSON_VALUES, max_size=8) | st.dictionaries(TEXT, JSON_VALUES, max_size=8)


def _members(pieces: Any) -> Any:
    """Slices (memoryview or msgspec.Raw) as bytes, keys kept."""
    if isinstance(pieces, dict):
        return {key: bytes(piece) for key, piece in pieces.items()}
    return [bytes(piece) for piece in pieces]


@given(value=CONTAINERS)
@settings(max_examples=400, deadline=None)
def test_split_json_gives_the_members_msgspec_gives(value: Any) -> None:
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    pieces = split_json(compact)
    expected = msgspec.json.decode(compact, type=dict[str, msgspec.Raw] | list[msgspec.Raw])
    if pieces is None:  # only an object with an escaped key is left to msgspec
        assert isinstance(value, dict)
        assert any(json.dumps(key, ensure_ascii=False)[1:-1] != key for key in value)
    else:
        assert _members(pieces) == _members(expected)


@pytest.mark.parametrize("pad", range(0, 140, 3))
def test_split_json_reads_brackets_and_quotes_in_strings_across_blocks(pad: int) -> None:
    # Blocks of 64 bytes are read at once unless they hold a backslash: brackets and escaped
    # quotes inside strings, before, on and after each block's edge.
    tricky = "x" * pad + '"]}[{' + "y" * (pad % 70) + "\\"
    value = {"a": [tricky, {"b": "]}" * 40, "c": [[], {}, tricky]}], "d": 1, "e": tricky}
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    pieces = split_json(compact)
    assert pieces is not None
    assert {key: json.loads(bytes(piece)) for key, piece in pieces.items()} == value
    inner = split_json(pieces["a"])
    assert [json.loads(bytes(piece)) for piece in inner] == value["a"]


@pytest.mark.parametrize(
    ("data", "members"),
    [
        (b"[]", []),
        (b"{}", {}),
        (
            b'[1,-2.5e3,true,null,"s",[],{}]',
            [b"1", b"-2.5e3", b"true", b"null", b'"s"', b"[]", b"{}"],
        ),
        (b'{"a":1,"a":2}', {"a": b"2"}),  # the last of two equal keys, as msgspec does
        (b'{"\\u00e9":1}', None),  # an escaped key: left to msgspec
        (b"1", None),
        (b'"text"', None),
    ],
)
def test_split_json_of_small_and_odd_values(data: bytes, members: Any) -> None:
    pieces = split_json(data)
    assert (None if pieces is None else _members(pieces)) == members


@pytest.mark.parametrize(
    "malformed", [b'{"', b'{"a"', b'{"a":', b"{a:1}", b'["x', b"[1", b"[[1,2]"]
)
def test_split_json_of_malformed_text_is_an_error_not_a_read_past_the_end(
    malformed: bytes,
) -> None:
    with pytest.raises(ValueError, match="compact, valid JSON"):
        split_json(malformed)


JSONISH_BYTES = st.lists(
    st.sampled_from([b"{", b"}", b"[", b"]", b'"', b"\\", b":", b",", b" ", b"\\u", b"00e9"])
    | st.binary(max_size=6),
    max_size=40,
).map(b"".join)


@given(data=JSONISH_BYTES)
@settings(max_examples=1000, deadline=None)
def test_any_bytes_are_read_within_their_end(data: bytes) -> None:
    # Hostile uploads reach compact_json as they are; split_json only after msgspec, but it
    # must not read past the end of whatever it is given either (ASan runs these too).
    compacted = compact_json(data)
    if compacted is not None:
        assert len(compacted[0]) <= len(data)
    for text in (data, compacted[0] if compacted else b""):
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            split_json(text)
