"""How a contract object is written from a model instance, or from a row PostgreSQL has
already formatted (the list pages' fast path; see `Shape`)."""

from dataclasses import dataclass, field
from datetime import datetime

import orjson
from django.db.models import F, Func, QuerySet, TextField
from django.db.models.functions import Cast

from apps.common.time import iso


@dataclass(frozen=True)
class Shape:
    """One contract object: its fields in the contract's order, which of them are timestamps
    (written with `iso()`) and which are JSON values (arrays, message parts).

    It writes the object from a model instance (`from_model`: single objects, webhook events,
    SQLite lists), and on PostgreSQL from a row the database has already formatted
    (`rows` + `from_row`): list pages used to spend most of their time making model objects and
    parsing timestamps in Django's pure-Python time-zone loader, only to write them back as
    text (issue 14, benchmarks/profile_request.py). Both give the same dict; tests hold them
    equal.
    """

    name: str
    fields: tuple[str, ...]
    times: frozenset[str] = frozenset()
    json: frozenset[str] = frozenset()
    # (output field, row key, is JSON text) for each field: worked out once, not for every row.
    _row_plan: tuple[tuple[str, str, bool], ...] = field(
        init=False, repr=False, compare=False, default=()
    )

    def from_model(self, instance) -> dict:
        out: dict = {"object": self.name}
        for name in self.fields:
            value = getattr(instance, name)
            if name in self.times:
                value = iso(value)
            elif name in self.json and isinstance(value, list):
                value = list(value)
            out[name] = value
        return out

    def rows(self, queryset: QuerySet, *, cursor_field: str) -> QuerySet:
        """`queryset` as dicts for `from_row` and `cursor` (PostgreSQL only): timestamps in
        `iso()`'s form, JSON as text, and the cursor's field to the microsecond."""
        text = TextField()
        annotations: dict[str, Func] = {
            f"{name}_out": Func(F(name), template=_ISO_TEMPLATE, output_field=text)
            for name in self.times
        }
        annotations.update({f"{name}_out": Cast(name, text) for name in self.json})
        annotations["cursor_at"] = Func(
            F(cursor_field), template=_CURSOR_TEMPLATE, output_field=text
        )
        plain = [name for name in self.fields if name not in self.times and name not in self.json]
        return queryset.annotate(**annotations).values(*plain, *annotations)

    def __post_init__(self) -> None:
        plan = tuple(
            (name, f"{name}_out" if name in self.times or name in self.json else name,
             name in self.json)
            for name in self.fields
        )  # fmt: skip
        object.__setattr__(self, "_row_plan", plan)

    def from_row(self, row: dict) -> dict:
        out: dict = {"object": self.name}
        loads = orjson.loads
        for name, key, is_json in self._row_plan:
            value = row[key]
            out[name] = loads(value) if is_json and value is not None else value
        return out

    @staticmethod
    def cursor(row: dict) -> tuple[datetime | None, str]:
        at = row["cursor_at"]
        return (datetime.fromisoformat(at) if at is not None else None), row["id"]


# `iso()`'s form: UTC, milliseconds (truncated, as Python's isoformat does), a `Z`.
_ISO_TEMPLATE = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
# The cursor's: every microsecond, so paging stays exact.
_CURSOR_TEMPLATE = (
    "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US+00:00')"
)
