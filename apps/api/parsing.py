"""Strict request bodies: malformed JSON, oversized and too deeply nested bodies never reach a
view.

One nesting limit (`API_MAX_JSON_DEPTH`, 64 levels: each object or array is one level, the
body itself the first) is enforced here, once, right after parsing. Past it a body is a
`400 bad_request` naming where it goes too deep, before any serializer sees it: Python code that
walks a value recursively (DRF's fields, `str()`, orjson's 255-level `dumps`) is then never
handed a value deep enough to fail.
"""

from collections.abc import Iterable
from typing import Any

import orjson
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from apps.common.errors import BadRequest, PayloadTooLarge

# How many path segments a "nested too deeply" message shows before it elides the rest.
_PATH_SHOWN = 4


def _too_deep_path(value, *, levels_left: int) -> list[str] | None:
    """The path to the first container nested past the limit, or None if the value fits."""
    children: Iterable[tuple[str | int, Any]]
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, list):
        children = enumerate(value)
    else:
        return None
    if levels_left == 0:
        return []
    for key, child in children:
        if isinstance(child, dict | list):
            inner = _too_deep_path(child, levels_left=levels_left - 1)
            if inner is not None:
                return [f"[{key}]" if isinstance(key, int) else f".{key}", *inner]
    return None


def check_depth(data, *, root: str = "body") -> None:
    """Raise BadRequest when `data` nests objects and arrays deeper than the limit."""
    path = _too_deep_path(data, levels_left=settings.API_MAX_JSON_DEPTH)
    if path is None:
        return
    shown = "".join(path[:_PATH_SHOWN]) + ("..." if len(path) > _PATH_SHOWN else "")
    raise _nested_too_deep(f"{root}{shown}" if root else shown.lstrip("."))


def _nested_too_deep(where: str) -> BadRequest:
    limit = settings.API_MAX_JSON_DEPTH
    return BadRequest(
        f"{where}: JSON nested deeper than {limit} levels (objects and arrays); flatten it."
    )


class StrictJsonParser(BaseParser):
    media_type = "application/json"
    max_bytes_setting = "API_MAX_JSON_BODY_BYTES"
    # Field names are the body's own keys; an ingest body is an array named `records`.
    root_name = ""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = getattr(settings, self.max_bytes_setting)
        if stream is None:
            raise ParseError("The request body is empty; send a JSON object.")
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise PayloadTooLarge(f"The JSON body is larger than {limit} bytes.")
        if not body.strip():
            raise ParseError("The request body is empty; send a JSON object.")
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            if "depth limit" in str(exc):  # orjson's own ceiling (1024 levels) is past ours
                raise _nested_too_deep(self.root_name or "body") from None
            raise ParseError(f"Malformed JSON: {exc}") from None
        check_depth(data, root=self.root_name)
        return data


class IngestJsonParser(StrictJsonParser):
    max_bytes_setting = "API_MAX_INGEST_BODY_BYTES"
    root_name = "records"
