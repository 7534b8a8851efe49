"""Keyset pagination (contract section 8): signed opaque cursors, constant cost at any depth.

A cursor holds the last row's sort value and id. The next page is the rows strictly after that
pair in the list's order, found with an index range scan on (agent, sort key, id): no OFFSET,
no COUNT. `has_more` comes from fetching one row more than asked. Selectors, pages and API views
all page through this module (the /v1 activity lists on PostgreSQL through apps.common.listing,
with the same predicate and these cursors); the OpenAPI description of its parameters is in
apps.api.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.core import signing
from django.db.models import BooleanField, F, Func, Q, QuerySet, Value

from apps.common.errors import BadRequest

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@dataclass(frozen=True)
class Keyset:
    """The order of one list: a sort field, then the id as tie-breaker, in one direction; or a
    sort field, then a time field (`then`), then the id — runs by status, newest first within
    a status, from the one index that also serves the status filter."""

    name: str  # salts the cursor, so one list's cursor is refused by another
    field: str
    descending: bool
    # What the sort value is: "time" (a datetime), "number" or "text". Empty: told by the
    # field's name (`..._at` is a time, `name` is text, the rest are numbers).
    value_kind: str = ""
    then: str = ""  # a time field ordering the rows of one sort value, before the id

    @property
    def kind(self) -> str:
        if self.value_kind:
            return self.value_kind
        if self.field.endswith("_at"):
            return "time"
        return "text" if self.field == "name" else "number"

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.field, self.then, "id") if self.then else (self.field, "id")

    @property
    def order_by(self) -> tuple[str, ...]:
        sign = "-" if self.descending else ""
        return tuple(f"{sign}{name}" for name in self.fields)

    def value_of(self, row: Any) -> Any:
        """A row's sort value: its field's, or (field, then) for a keyset with `then`."""
        if self.then:
            return (getattr(row, self.field), getattr(row, self.then))
        return getattr(row, self.field)

    def after(self, value: Any, row_id: str) -> Q:
        # `sort <= v AND (sort, id) < (v, last)`: the row comparison is one index range on
        # (agent, sort, id) that starts at the cursor's row, even inside a long run of equal
        # values (a status, a count of attempts), where `sort < v OR id < last` read every row
        # of the run before the cursor. The first half lets the planner see the bound on the
        # sort key alone as well (and keeps SQLite's plans on the index).
        edge = "lte" if self.descending else "gte"
        values = (*value, row_id) if self.then else (value, row_id)
        return Q(**{f"{self.field}__{edge}": values[0]}) & Q(
            _RowCompare(
                [F(name) for name in self.fields], [Value(v) for v in values], less=self.descending
            )
        )


class _RowCompare(Func):
    """`(a, b, ...) < (x, y, ...)` (or `>`): a row comparison, which PostgreSQL and SQLite both
    read as one range of a multicolumn index."""

    output_field = BooleanField()

    def __init__(self, columns: list, values: list, *, less: bool) -> None:
        super().__init__(*columns, *values)
        self.less = less

    def as_sql(self, compiler, connection, **extra_context):  # type: ignore[override]
        parts = [compiler.compile(expression) for expression in self.get_source_expressions()]
        half = len(parts) // 2
        columns = ", ".join(sql for sql, _params in parts[:half])
        values = ", ".join(sql for sql, _params in parts[half:])
        params = [param for _sql, part_params in parts for param in part_params]
        op = "<" if self.less else ">"
        return f"(({columns}) {op} ({values}))", params


@dataclass(frozen=True)
class PageRequest:
    limit: int
    after: str | None
    # The console's "Newer": the page that ends just before this cursor's row. The API has no
    # such parameter; its clients walk forward only.
    before: str | None = None


@dataclass
class Page:
    rows: list
    has_more: bool
    next_cursor: str | None
    # The first row's cursor when newer rows exist (console pages only; not in the API's body).
    previous_cursor: str | None = None

    def envelope(self, render: Callable[[Any], dict]) -> dict:
        return {
            "object": "list",
            "data": [render(row) for row in self.rows],
            "has_more": self.has_more,
            "next_cursor": self.next_cursor,
        }


def page_request(query_params, *, default_limit: int = DEFAULT_LIMIT) -> PageRequest:
    """Read and validate `limit` and `after`; anything out of range is a 400."""
    raw_limit = query_params.get("limit")
    if raw_limit is None:
        limit = default_limit
    else:
        if not raw_limit.isascii() or not raw_limit.isdigit():
            raise BadRequest(f"limit must be an integer from 1 to {MAX_LIMIT}; got {raw_limit!r}.")
        limit = int(raw_limit)
        if not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(f"limit must be an integer from 1 to {MAX_LIMIT}; got {limit}.")
    after = query_params.get("after")
    if after is not None and after == "":
        raise BadRequest("after must be a cursor taken from a previous page's next_cursor.")
    return PageRequest(limit=limit, after=after)


def cursor_encode(keyset: Keyset, value: Any, row_id: str) -> str:
    """The signed cursor of a row by its keyset value and id (the ORM's pages and the compiled
    lists of apps.common.listing write the same ones)."""
    if keyset.then:
        sort_value, then_value = value
        payload = {"v": sort_value, "w": then_value.isoformat(), "i": row_id}
    elif isinstance(value, datetime):
        payload = {"t": value.isoformat(), "i": row_id}
    else:
        payload = {"v": value, "i": row_id}
    return signing.dumps(payload, salt=f"cursor:{keyset.name}", compress=True)


_MAX_CURSOR_TEXT = 512
_MAX_CURSOR_NUMBER = 2**63 - 1


def _cursor_text(value: Any) -> str:
    """A string a cursor may carry to SQL: short, printable (no NUL, which PostgreSQL refuses)."""
    if not isinstance(value, str) or not value or len(value) > _MAX_CURSOR_TEXT:
        raise ValueError("not a cursor string")
    if not value.isprintable():
        raise ValueError("not a cursor string")
    return value


def _cursor_time(text: Any) -> datetime:
    value = datetime.fromisoformat(_cursor_text(text))
    if value.tzinfo is None:
        raise ValueError("a cursor's time has a zone")
    return value.astimezone(UTC)  # OverflowError at the calendar's ends


def _cursor_value(keyset: Keyset, payload: dict) -> Any:
    """The sort value, of the type the keyset's field has (with its `then` time), or
    ValueError."""
    if keyset.kind == "time":
        if set(payload) != {"t", "i"}:
            raise ValueError("not a time cursor")
        return _cursor_time(payload["t"])
    if keyset.then:
        if set(payload) != {"v", "w", "i"}:
            raise ValueError("not a value and time cursor")
        return (_cursor_plain_value(keyset, payload["v"]), _cursor_time(payload["w"]))
    if set(payload) != {"v", "i"}:
        raise ValueError("not a value cursor")
    return _cursor_plain_value(keyset, payload["v"])


def _cursor_plain_value(keyset: Keyset, value: Any) -> Any:
    if keyset.kind == "text":
        # "" is a value like another: a column's missing values sort as "" (Coalesce).
        return value if value == "" else _cursor_text(value)
    # bool is an int to Python, never a sort value here; floats must be finite.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    if abs(value) > _MAX_CURSOR_NUMBER or value != value:
        raise ValueError("not a number in range")
    return value


def cursor_decode(keyset: Keyset, cursor: str) -> tuple[Any, str]:
    """The keyset value and row id a cursor of this keyset carries; 400 when it is not one.

    The payload is signed, but a cursor signed with a leaked or rotated key, or written by an
    older version, must still be refused cleanly: every field's type is checked here, for
    every list, before it reaches a query."""
    try:
        payload = signing.loads(cursor, salt=f"cursor:{keyset.name}")
        if not isinstance(payload, dict):
            raise ValueError("not an object")
        row_id = payload.get("i")
        # A whole-number id is read as its text, as the ORM would compare it (a benchmark's
        # cursors carried the row key once); anything else must be a printable string.
        if isinstance(row_id, int) and not isinstance(row_id, bool):
            row_id = str(row_id)
        row_id = _cursor_text(row_id)
        value = _cursor_value(keyset, payload)
    except (signing.BadSignature, KeyError, TypeError, ValueError, OverflowError):
        raise BadRequest(
            "after is not a valid cursor for this list; pass next_cursor from the previous page."
        ) from None
    return value, row_id


def _cursor_of(keyset: Keyset, row: Any) -> str:
    return cursor_encode(keyset, keyset.value_of(row), row.id)


def _page_before(queryset: QuerySet, *, keyset: Keyset, page: PageRequest) -> Page:
    """The `limit` rows just before the cursor's row, read backwards on the same index."""
    assert page.before is not None
    value, row_id = cursor_decode(keyset, page.before)
    backwards = replace(keyset, descending=not keyset.descending)
    rows = list(
        queryset.order_by(*backwards.order_by).filter(backwards.after(value, row_id))[
            : page.limit + 1
        ]
    )
    has_newer = len(rows) > page.limit
    rows = rows[: page.limit][::-1]
    if not rows:  # nothing newer any more (rows deleted): the newest page
        return paginate(queryset, keyset=keyset, page=PageRequest(limit=page.limit, after=None))
    return Page(
        rows=rows,
        has_more=True,  # the cursor's own row, at least, is older
        next_cursor=_cursor_of(keyset, rows[-1]),
        previous_cursor=_cursor_of(keyset, rows[0]) if has_newer else None,
    )


def paginate(queryset: QuerySet, *, keyset: Keyset, page: PageRequest) -> Page:
    """One page of model instances (the /v1 lists on PostgreSQL page through
    apps.common.listing instead)."""
    if page.before is not None:
        return _page_before(queryset, keyset=keyset, page=page)
    queryset = queryset.order_by(*keyset.order_by)
    if page.after is not None:
        value, row_id = cursor_decode(keyset, page.after)
        queryset = queryset.filter(keyset.after(value, row_id))
    rows: Sequence = list(queryset[: page.limit + 1])
    has_more = len(rows) > page.limit
    rows = list(rows[: page.limit])
    next_cursor = _cursor_of(keyset, rows[-1]) if has_more else None
    # A page reached through a cursor has newer rows (at least the cursor's own).
    previous_cursor = _cursor_of(keyset, rows[0]) if page.after is not None and rows else None
    return Page(
        rows=rows, has_more=has_more, next_cursor=next_cursor, previous_cursor=previous_cursor
    )
