"""Streamed exports of filtered lists (CSV or JSON), in constant memory at any size.

Rows are read in keyset batches (in the order the list shows, with its index: the keyset of
the list's sort, apps.common.sorting; no OFFSET, no server-side cursor held open between
batches) and written as they are read, so exporting 100,000 runs
never holds more than one batch.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from django.db.models import Model, QuerySet
from django.http import StreamingHttpResponse

from apps.common.errors import BadRequest
from apps.common.keyset import Keyset

BATCH_SIZE = 1000
FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def keyset_iterate(
    queryset: QuerySet,
    *,
    keyset: Keyset,
    batch_size: int = BATCH_SIZE,
    each_batch: Callable[[list], None] | None = None,
) -> Iterator[Model]:
    """Every row of `queryset` in the keyset's order, fetched `batch_size` rows at a time;
    `each_batch` sees each batch before its rows are yielded (to read what goes with them in
    one query per batch)."""
    ordered = queryset.order_by(*keyset.order_by)
    batch = list(ordered[:batch_size])
    while batch:
        if each_batch is not None:
            each_batch(batch)
        yield from batch
        if len(batch) < batch_size:
            return
        last = batch[-1]
        batch = list(ordered.filter(keyset.after(keyset.value_of(last), last.id))[:batch_size])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return str(value)


def _csv_lines(rows: Iterable[dict], columns: list[str]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _json_array(rows: Iterable[dict]) -> Iterator[bytes]:
    yield b"["
    separator = b""
    for row in rows:
        yield separator + orjson.dumps(row)
        separator = b",\n"
    yield b"]\n"


def export_format(raw: str | None) -> str:
    fmt = (raw or "csv").lower()
    if fmt not in FORMATS:
        raise BadRequest(f"format must be one of {', '.join(FORMATS)}.")
    return fmt


def export_response(
    *,
    queryset: QuerySet,
    keyset: Keyset,
    render: Callable[[Any], dict],
    columns: list[str],
    filename: str,
    fmt: str,
    each_batch: Callable[[list], None] | None = None,
) -> StreamingHttpResponse:
    """A download of every row of `queryset` rendered by `render` (the API's own output
    function, so an export has exactly the API's fields)."""
    rows = (render(row) for row in keyset_iterate(queryset, keyset=keyset, each_batch=each_batch))
    content = _csv_lines(rows, columns) if fmt == "csv" else _json_array(rows)
    response = StreamingHttpResponse(content, content_type=FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response
