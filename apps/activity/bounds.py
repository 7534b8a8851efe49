"""Size bounds for what a step stores: a runtime may send a 1 MB tool output or attribute, and
the run page and the API must stay fast. A value over its bound is stored shortened and the
field is named in the step's `truncated` list, so nothing looks complete when it is not.

- JSON values (input, output, documents) over `MAX_JSON_BYTES` of JSON text become
  `{"truncated": true, "bytes": <full size>, "preview": "<the first MAX_JSON_BYTES of the text>"}`.
- Text (error, query, a passage) is cut at `MAX_TEXT_CHARS` characters and ends with "…".
- Attributes keep at most `MAX_ATTRIBUTES` keys; each value over `MAX_ATTRIBUTE_BYTES` becomes a
  string preview, named `attributes.<key>` in `truncated`.
"""

from typing import Any

import orjson

MAX_JSON_BYTES = 32 * 1024
MAX_TEXT_CHARS = 16 * 1024
MAX_PASSAGE_CHARS = 4 * 1024
MAX_ATTRIBUTE_BYTES = 4 * 1024
MAX_ATTRIBUTES = 200
ELLIPSIS = "…"


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def bounded_json(value: Any, *, limit: int = MAX_JSON_BYTES) -> tuple[Any, bool]:
    """(the value, or its marked preview when its JSON text is over `limit` bytes; whether cut)."""
    if value is None or isinstance(value, bool | int | float):
        return value, False
    if isinstance(value, str) and len(value) <= limit // 4:
        return value, False  # no string this short can be `limit` bytes of JSON
    text = _dumps(value)
    if len(text) <= limit:
        return value, False
    preview = text[:limit].decode("utf-8", errors="ignore")
    return {"truncated": True, "bytes": len(text), "preview": preview}, True


def bounded_text(value: str | None, *, limit: int = MAX_TEXT_CHARS) -> tuple[str | None, bool]:
    if value is None or len(value) <= limit:
        return value, False
    return value[:limit] + ELLIPSIS, True


def bounded_documents(documents: list[dict]) -> tuple[list[dict], bool]:
    """Each passage cut to MAX_PASSAGE_CHARS, then the whole list bounded like any JSON."""
    cut = False
    shortened = []
    for document in documents:
        passage, passage_cut = bounded_text(document.get("passage"), limit=MAX_PASSAGE_CHARS)
        cut = cut or passage_cut
        shortened.append({**document, "passage": passage} if passage_cut else document)
    value, list_cut = bounded_json(shortened, limit=MAX_JSON_BYTES * 4)
    if list_cut:
        # A list the page cannot show whole: keep the documents that fit, drop the rest.
        kept: list[dict] = []
        size = 2
        for document in shortened:
            size += len(_dumps(document)) + 1
            if size > MAX_JSON_BYTES * 4:
                break
            kept.append(document)
        return kept, True
    return value, cut


def bounded_attributes(attributes: dict) -> tuple[dict, list[str]]:
    """(attributes within bounds, the `attributes.<key>` names cut or `attributes` if keys were
    dropped)."""
    out: dict = {}
    truncated: list[str] = []
    for index, (key, value) in enumerate(attributes.items()):
        if index >= MAX_ATTRIBUTES:
            truncated.append("attributes")
            break
        key = str(key)[:255]
        # Most values are short strings and numbers: a character is at most 4 bytes of UTF-8,
        # so only a longer string is encoded to be measured, and only a list or object dumped.
        if isinstance(value, str):
            if len(value) > MAX_ATTRIBUTE_BYTES // 4 and len(value.encode()) > MAX_ATTRIBUTE_BYTES:
                out[key] = value.encode()[:MAX_ATTRIBUTE_BYTES].decode("utf-8", errors="ignore")
                out[key] += ELLIPSIS
                truncated.append(f"attributes.{key}")
            else:
                out[key] = value
            continue
        text = None if value is None or isinstance(value, bool | int | float) else _dumps(value)
        if text is not None and len(text) > MAX_ATTRIBUTE_BYTES:
            out[key] = text[:MAX_ATTRIBUTE_BYTES].decode("utf-8", errors="ignore") + ELLIPSIS
            truncated.append(f"attributes.{key}")
        else:
            out[key] = value
    return out, truncated
