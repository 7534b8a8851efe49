"""How a contract object is written from a model instance, or from a row PostgreSQL has
already formatted (the list pages' fast path; see `Shape`)."""

from dataclasses import dataclass
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

    def from_model(self, instance) -> dict:
        out: dict = {"object": self.name}
        for field in self.fields:
            value = getattr(instance, field)
            if field in self.times:
                value = iso(value)
            elif field in self.json and isinstance(value, list):
                value = list(value)
            out[field] = value
        return out

    def rows(self, queryset: QuerySet, *, cursor_field: str) -> QuerySet:
        """`queryset` as dicts for `from_row` and `cursor` (PostgreSQL only): timestamps in
        `iso()`'s form, JSON as text, and the cursor's field to the microsecond."""
        text = TextField()
        annotations: dict[str, Func] = {
            f"{field}_out": Func(F(field), template=_ISO_TEMPLATE, output_field=text)
            for field in self.times
        }
        annotations.update({f"{field}_out": Cast(field, text) for field in self.json})
        annotations["cursor_at"] = Func(
            F(cursor_field), template=_CURSOR_TEMPLATE, output_field=text
        )
        plain = [f for f in self.fields if f not in self.times and f not in self.json]
        return queryset.annotate(**annotations).values(*plain, *annotations)

    def __post_init__(self) -> None:
        # (output field, row key, is JSON text) once, not worked out again for every row.
        plan = tuple(
            (field, f"{field}_out" if field in self.times or field in self.json else field,
             field in self.json)
            for field in self.fields
        )  # fmt: skip
        object.__setattr__(self, "_row_plan", plan)

    def from_row(self, row: dict) -> dict:
        out: dict = {"object": self.name}
        loads = orjson.loads
        for field, key, is_json in self._row_plan:  # type: ignore[attr-defined]
            value = row[key]
            out[field] = loads(value) if is_json and value is not None else value
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
