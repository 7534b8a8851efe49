"""A list's rows, described once and read two ways (issue 14, "the list hot path").

A selector describes which rows a list holds as a `ListQuery`: a model and a few `Condition`s
(a column compared with a value). The console and SQLite read it through the ORM
(`ListQuery.queryset`); the /v1 lists on PostgreSQL read it through a `CompiledList`, whose SQL
is written once per shape of query (which conditions are present, whether there is a cursor)
and afterwards only gets new parameters. Django would build, compile and turn into dicts the
same query on every request: that was a third of a small page's time.

Both ways page in the same order, with the same keyset predicate (`Keyset.after`) and the same
signed cursors (`apps.common.keyset`), so a cursor from one works on the other; tests hold the
pages equal, cursors included.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from django.db import connection
from django.db.models import DateTimeField, Exists, Model, OuterRef, Q, QuerySet

from apps.common.keyset import Keyset, Page, PageRequest, cursor_decode, cursor_encode
from apps.common.shapes import Shape, column_sql

# The comparisons a `Condition` may make, as Django lookups and as SQL. `contains` is JSON
# containment (a jsonb array holding the value's items), its value bound as JSON text.
OPERATORS = {
    "exact": "= %s",
    "gt": "> %s",
    "gte": ">= %s",
    "lt": "< %s",
    "lte": "<= %s",
    "contains": "@> %s::jsonb",
}


@dataclass(frozen=True)
class Through:
    """Rows of another model linked to a list's row (`links`: (their field, the list's field)
    pairs), for a condition on them: "conversations with a run in production". The conditions
    of a list through the same `Through` are met by one and the same linked row (one EXISTS)."""

    model: type[Model]
    links: tuple[tuple[str, str], ...]

    def exists(self, conditions: list["Condition"]) -> Exists:
        return Exists(
            self.model._default_manager.filter(
                **{theirs: OuterRef(ours) for theirs, ours in self.links},
                **{f"{c.field}__{c.lookup}": c.value for c in conditions},
            )
        )


@dataclass(frozen=True)
class Condition:
    """`field <lookup> value` on one model field (named as in the model, e.g. `agent`,
    `created_at`), or on a linked row's field (`through`). The compiled lists refuse a None
    value: SQL's `= NULL` matches nothing where the ORM's `field=None` means "is null"."""

    field: str
    lookup: str
    value: Any
    through: Through | None = None

    def q(self) -> Q:
        assert self.through is None, "conditions through a link: where_q"
        return Q(**{f"{self.field}__{self.lookup}": self.value})

    @property
    def sql_value(self) -> Any:
        """The value as the compiled SQL binds it."""
        return orjson.dumps(self.value).decode() if self.lookup == "contains" else self.value


def where_q(where: tuple[Condition, ...]) -> list:
    """The conditions as ORM filters: plain ones as lookups, those through a link grouped into
    one EXISTS per link (met by one linked row)."""
    plain = [condition.q() for condition in where if condition.through is None]
    return plain + [
        through.exists(conditions) for through, conditions in _by_through(where).items()
    ]


def _through_sql(model: type[Model], through: Through, conditions: list[Condition]) -> str:
    """The EXISTS of `where_q` in SQL, its values bound in the conditions' order."""
    table = connection.ops.quote_name(model._meta.db_table)
    theirs = connection.ops.quote_name(through.model._meta.db_table)
    predicates = [
        f"{theirs}.{column_sql(through.model, their)} = {table}.{column_sql(model, our)}"
        for their, our in through.links
    ] + [f"{theirs}.{column_sql(through.model, c.field)} {OPERATORS[c.lookup]}" for c in conditions]
    return f"EXISTS (SELECT 1 FROM {theirs} WHERE {' AND '.join(predicates)})"  # noqa: S608


def ordered_params(where: tuple[Condition, ...]) -> list:
    """The values of `where` in the order `CompiledList.sql` binds them: plain conditions,
    then those through each link."""
    params = [condition.sql_value for condition in where if condition.through is None]
    for conditions in _by_through(where).values():
        params += [condition.sql_value for condition in conditions]
    return params


def _by_through(where: tuple[Condition, ...]) -> dict[Through, list[Condition]]:
    grouped: dict[Through, list[Condition]] = {}
    for condition in where:
        if condition.through is not None:
            grouped.setdefault(condition.through, []).append(condition)
    return grouped


@dataclass(frozen=True)
class ListQuery:
    """The rows of one list: a model's rows meeting every condition.

    A list under a parent (a conversation's messages) may name `parent_check`, which raises
    NotFound when the parent is missing. A row of the list proves its parent, so the check runs
    only when a page comes back empty (`check_empty_page`): one query a page instead of two.
    """

    model: type[Model]
    where: tuple[Condition, ...]
    parent_check: Callable[[], None] | None = None

    def queryset(self) -> QuerySet:
        return self.model._default_manager.filter(*where_q(self.where))

    def check_empty_page(self, rows: Sequence[Any]) -> None:
        """Tell an empty list from a missing parent (NotFound)."""
        if not rows and self.parent_check is not None:
            self.parent_check()


@dataclass
class CompiledList:
    """The /v1 list pages of one (model, shape, keyset) on PostgreSQL, from SQL written once.

    The SELECT list is the shape's (`Shape.select_list`) and then the keyset's column to the
    microsecond, which only the last row of a page needs parsed (for its cursor). Rows come
    back as tuples for `Shape.from_row`. Each combination of present conditions and cursor gets
    one SQL string, kept in `statements`; a request only binds its values.
    """

    model: type[Model]
    shape: Shape
    keyset: Keyset
    # Keyed by the conditions' (field, lookup) (and link, for one through a link) and cursor.
    statements: dict[tuple[tuple[tuple, ...], bool], str] = field(default_factory=dict)
    _select: str = field(init=False, repr=False)
    _order: str = field(init=False, repr=False)
    _after: str = field(init=False, repr=False)
    _id_position: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # The cursor column is written as a time, which only a date-time sort key is.
        assert isinstance(self.model._meta.get_field(self.keyset.field), DateTimeField)
        sort, row_id = column_sql(self.model, self.keyset.field), column_sql(self.model, "id")
        columns = [*self.shape.select_list(self.model), _CURSOR_SQL.format(column=sort)]
        table = connection.ops.quote_name(self.model._meta.db_table)
        self._select = f"SELECT {', '.join(columns)} FROM {table}"  # noqa: S608 - names from _meta
        direction = "DESC" if self.keyset.descending else "ASC"
        self._order = f"ORDER BY {sort} {direction}, {row_id} {direction} LIMIT %s"
        # The same predicate as `Keyset.after` (`sort <= v AND (sort, id) < (v, last)` when
        # descending): the page stays one range scan of the (agent, sort, id) index.
        strict, edge = ("<", "<=") if self.keyset.descending else (">", ">=")
        self._after = f"{sort} {edge} %s AND ({sort}, {row_id}) {strict} (%s, %s)"
        self._id_position = self.shape.fields.index("id")

    def sql(self, where: tuple[Condition, ...], *, after: bool) -> str:
        """The statement for this shape of query: written on first use, then reused."""
        key = (
            tuple(
                (c.field, c.lookup) if c.through is None else (c.field, c.lookup, c.through)
                for c in where
            ),
            after,
        )
        statement = self.statements.get(key)
        if statement is None:
            predicates = [
                f"{column_sql(self.model, c.field)} {OPERATORS[c.lookup]}"
                for c in where
                if c.through is None
            ]
            predicates += [
                _through_sql(self.model, through, conditions)
                for through, conditions in _by_through(where).items()
            ]
            if after:
                predicates.append(self._after)
            statement = f"{self._select} WHERE {' AND '.join(predicates)} {self._order}"
            self.statements[key] = statement
        return statement

    def page(self, query: ListQuery, page: PageRequest) -> Page:
        """One page of an API list, its rows as tuples for `Shape.from_row` (forward only: the
        API has no `before`, and its body no `previous_cursor`)."""
        assert query.model is self.model and page.before is None
        params = ordered_params(query.where)
        if None in params:
            raise ValueError(f"A compiled list cannot compare with None: {query.where}")
        if page.after is not None:
            value, row_id = cursor_decode(self.keyset, page.after)
            # Ids are text; the ORM would coerce a (signed) non-text id the same way.
            params += [value, value, row_id if isinstance(row_id, str) else str(row_id)]
        params.append(page.limit + 1)
        with connection.cursor() as cursor:
            cursor.execute(self.sql(query.where, after=page.after is not None), params)
            rows = cursor.fetchall()
        if len(rows) <= page.limit:
            return Page(rows=rows, has_more=False, next_cursor=None)
        del rows[page.limit :]
        last = rows[-1]
        at = last[-1]  # the cursor column
        value = datetime.fromisoformat(at) if at is not None else None
        return Page(
            rows=rows,
            has_more=True,
            next_cursor=cursor_encode(self.keyset, value, last[self._id_position]),
        )


@cache
def compiled_list(model: type[Model], shape: Shape, keyset: Keyset) -> CompiledList:
    """The one `CompiledList` of this process for a (model, shape, keyset)."""
    return CompiledList(model, shape, keyset)


# The cursor's: every microsecond, so paging stays exact.
_CURSOR_SQL = "to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US+00:00')"
