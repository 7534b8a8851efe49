"""How a contract object is written from a model instance, or from a row PostgreSQL has
already formatted (the /v1 list pages; see `Shape` and apps.common.listing)."""

from dataclasses import dataclass

import orjson
from django.db import connection
from django.db.models import Field, Model

from apps.common.time import iso


@dataclass(frozen=True)
class Shape:
    """One contract object: its fields in the contract's order, which of them are timestamps
    (written with `iso()`) and which are JSON values (arrays, message parts).

    It writes the object from a model instance (`from_model`: single objects, webhook events,
    the console, SQLite lists), and on PostgreSQL from a row of `select_list`'s columns
    (`from_row`): PostgreSQL formats the timestamps and writes JSON as text, so a list page
    makes no model objects and parses no timestamps in Django's pure-Python time-zone loader
    (issue 14, benchmarks/profile_request.py). Both give the same dict; tests hold them equal.
    """

    name: str
    fields: tuple[str, ...]
    times: frozenset[str] = frozenset()
    json: frozenset[str] = frozenset()

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

    def select_list(self, model: type[Model]) -> list[str]:
        """The SQL expressions (PostgreSQL) whose row `from_row` reads, one per field in
        `fields`' order: timestamps in `iso()`'s form, JSON as text, the rest as stored."""
        expressions = []
        for name in self.fields:
            column = column_sql(model, name)
            if name in self.times:
                expressions.append(_ISO_SQL.format(column=column))
            elif name in self.json:
                expressions.append(f"{column}::text")
            else:
                expressions.append(column)
        return expressions

    def from_row(self, row: tuple) -> dict:
        """The object from a row of `select_list`'s columns (further columns are ignored)."""
        out: dict = {"object": self.name}
        out.update(zip(self.fields, row, strict=False))
        for name in self.json:
            value = out[name]
            if value is not None:
                out[name] = orjson.loads(value)
        return out


def column_sql(model: type[Model], name: str) -> str:
    """A model field's column, quoted: the model says what it is called."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column
    return connection.ops.quote_name(field.column)


# `iso()`'s form: UTC, milliseconds (truncated, as Python's isoformat does), a `Z`.
_ISO_SQL = "to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
