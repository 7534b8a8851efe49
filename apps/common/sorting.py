"""A console list's sortable columns, described once and used by every list page (issue 26).

A list names its columns in a `ListSorts`: the first is its default order, which pages with the
list's own keyset (the API's, so a cursor means the same on both). Any other choice — another
column, or the default one turned around — pages with a keyset of its own, named after the list,
the column and the direction: the cursor is signed with that name, so it carries the order it
was made in and a cursor of another order is refused (the page then starts over and says so).

A column sorts by a model field, or by an expression (`Coalesce(size, -1)` so missing values
sort below every real one, `Lower(name)` so case does not split the alphabet) annotated as
`sort_value`. Either way the model has an index on `(agent, the same field or expression, id)`
naming the list — or `(agent, field, then, id)` for a column with a `then` time — so a page at
any depth stays one index range scan.

The headers the template draws (`templates/_sort_header.html`) come from `ListSorts.headers`:
a link that sorts by the column (a click on the current column turns it around), the arrow, and
`aria-sort`.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import DateTimeField, Expression, F, QuerySet, Value
from django.db.models.functions import Coalesce

from apps.common.keyset import Keyset

SORT_PARAM = "sort"
DIRECTION_PARAM = "dir"
# The name an expression column is annotated as (and its keyset's field).
SORT_ANNOTATION = "sort_value"


# What a missing time sorts as: below every real one ("never used" last when newest first).
NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def time_or_never(field: str) -> Expression:
    """A nullable time column to sort by: a missing time sorts as `NEVER`."""
    return Coalesce(F(field), Value(NEVER), output_field=DateTimeField())


@dataclass(frozen=True)
class SortColumn:
    """One sortable column: its name in the query string (`?sort=`) and the template, its
    header, what it sorts by (a field name or an expression), the kind of value it sorts
    ("time", "number" or "text", for the cursor) and the direction a first click sorts in."""

    name: str
    label: str
    by: str | Expression
    kind: str
    first_direction: str = "desc"
    css: str = ""
    # A time field ordering the rows of one value, in the same direction, before the id (a
    # column of few values read from the index its filter uses: apps.common.keyset.Keyset).
    then: str = ""

    @property
    def field(self) -> str:
        return self.by if isinstance(self.by, str) else SORT_ANNOTATION


@dataclass(frozen=True)
class SortChoice:
    column: SortColumn
    descending: bool
    is_default: bool  # the list's own order: no `sort`/`dir` in its links


@dataclass(frozen=True)
class ListSorts:
    """The sortable columns of one list; `columns[0]` sorts as `default` (the list's keyset)."""

    default: Keyset
    columns: tuple[SortColumn, ...]

    def __post_init__(self) -> None:
        assert self.columns[0].field == self.default.field, "the first column is the default"
        assert len({column.name for column in self.columns}) == len(self.columns)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    def choose(self, params: Mapping[str, str]) -> SortChoice:
        """The order the query string asks for; an unknown column is the default column, and
        any direction but "asc"/"desc" is that column's first direction."""
        default = self.columns[0]
        column = next((c for c in self.columns if c.name == params.get(SORT_PARAM)), default)
        direction = params.get(DIRECTION_PARAM)
        if direction not in ("asc", "desc"):
            direction = column.first_direction
        descending = direction == "desc"
        is_default = column is default and descending == self.default.descending
        return SortChoice(column=column, descending=descending, is_default=is_default)

    def keyset(self, choice: SortChoice) -> Keyset:
        """The keyset paging through `choice`: the list's own for its default order."""
        if choice.is_default:
            return self.default
        direction = "desc" if choice.descending else "asc"
        name = f"{self.default.name}-{choice.column.name}-{direction}"
        return Keyset(
            name,
            choice.column.field,
            choice.descending,
            value_kind=choice.column.kind,
            then=choice.column.then,
        )

    def apply(self, queryset: QuerySet, choice: SortChoice) -> tuple[QuerySet, Keyset]:
        """`queryset` ready to page in `choice`'s order (an expression column annotated), and
        the keyset to page it with (`apps.common.keyset.paginate`)."""
        by = choice.column.by
        if not isinstance(by, str):
            queryset = queryset.annotate(**{SORT_ANNOTATION: by})
        return queryset, self.keyset(choice)

    def headers(self, choice: SortChoice) -> dict[str, dict]:
        """Each column's header for `templates/_sort_header.html`, by column name."""
        headers = {}
        for column in self.columns:
            active = column is choice.column
            if active:
                next_direction = "asc" if choice.descending else "desc"
                direction = "descending" if choice.descending else "ascending"
            else:
                next_direction, direction = column.first_direction, "none"
            headers[column.name] = {
                "name": column.name,
                "label": column.label,
                "css": column.css,
                "next_dir": next_direction,
                "aria": direction,
                "arrow": {"descending": "↓", "ascending": "↑"}.get(direction, ""),
            }
        return headers


def sorted_list(
    sorts: ListSorts, queryset: QuerySet, params: Mapping[str, str]
) -> tuple[QuerySet, Keyset, dict[str, dict]]:
    """What a list page needs: the rows in the asked order, its keyset, and its headers."""
    choice = sorts.choose(params)
    ordered, keyset = sorts.apply(queryset, choice)
    return ordered, keyset, sorts.headers(choice)
