"""New rows written in one COPY per table (PostgreSQL; `bulk_create` elsewhere), from model
instances or from plain values, and new instances built without Django's keyword constructor:
the costs that grow with a batch of a thousand steps.
"""

from typing import Any

import orjson
from django.db import connection, models
from psycopg.types.json import Jsonb


def _json_text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


_DEFAULT = object()  # a column the values leave out: its field's default
_COPY_LAYOUTS: dict[type, tuple[str, list[tuple[str, Any]], list[tuple[int, Any]], list]] = {}


def _copy_layout(model: type[models.Model]) -> tuple[str, list, list, list]:
    """(the COPY statement, (attribute name, default) per column with `_DEFAULT` for a default
    that is made per row, those columns' (index, default maker), the JSON columns' (index, JSON
    text of the default or None)); made once per model."""
    layout = _COPY_LAYOUTS.get(model)
    if layout is None:
        fields = [field for field in model._meta.concrete_fields if not field.primary_key]
        columns = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
        plain, made, json_columns = [], [], []
        for index, field in enumerate(fields):
            if isinstance(field, models.JSONField):
                default = field.get_default()
                text = None if default is None else _json_text(default)
                json_columns.append((index, text))
                plain.append((field.attname, _DEFAULT))
            elif field.has_default() and callable(field.default):
                made.append((index, field.get_default))
                plain.append((field.attname, _DEFAULT))
            else:
                plain.append((field.attname, field.get_default()))
        layout = _COPY_LAYOUTS[model] = (
            f"COPY {model._meta.db_table} ({columns}) FROM STDIN",
            plain,
            made,
            json_columns,
        )
    return layout


def rows_insert(model: type[models.Model], rows: list) -> None:
    """Insert new rows (their row key left to the database). On PostgreSQL one `COPY`, whose
    values psycopg writes in C: Django's per-field preparation of a bulk INSERT cost more than
    the database's work for a batch of a thousand steps. Unique and foreign keys apply as for
    an INSERT. Elsewhere (SQLite), `bulk_create`."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create(rows, batch_size=500)  # type: ignore[attr-defined]
        return
    statement, plain, _made, json_columns = _copy_layout(model)
    names = [name for name, _default in plain]
    json_fields = [index for index, _default_text in json_columns]
    # Django's error classes (IntegrityError, ...) for what psycopg's own cursor raises.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor  # psycopg's own cursor, under Django's wrapper
        with raw.copy(statement) as copy:
            for row in rows:
                values = [getattr(row, name) for name in names]
                for index in json_fields:
                    if values[index] is not None:
                        values[index] = Jsonb(values[index], dumps=_json_text)
                copy.write_row(values)


def values_insert(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """Insert new rows given as dicts by attribute name (`agent_id`, not `agent`; every other
    field its default): `rows_insert`'s COPY without a model instance per row, each row a list
    in the COPY's column order and each JSON value its JSON text (`_json_text`, the text
    `rows_insert`'s `Jsonb` writes). A thousand OTLP steps a request: the instances and the
    per-value adapters cost more than the COPY. Elsewhere (SQLite), `rows_insert`'s
    `bulk_create` of `new_row` instances."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        rows_insert(model, [new_row(model, values) for values in rows])
        return
    statement, plain, made, json_columns = _copy_layout(model)
    dumps = _json_text
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor  # psycopg's own cursor, under Django's wrapper
        with raw.copy(statement) as copy:
            for values in rows:
                get = values.get
                row = [get(name, default) for name, default in plain]
                for index, maker in made:
                    if row[index] is _DEFAULT:
                        row[index] = maker()
                for index, text in json_columns:
                    value = row[index]
                    if value is _DEFAULT:
                        row[index] = text
                    elif value is not None:
                        row[index] = dumps(value)
                copy.write_row(row)


_ROW_DEFAULTS: dict[type, list[tuple[str, Any]]] = {}


def new_row(model: type[models.Model], values: dict[str, Any]) -> Any:
    """An instance of a new row: `values` by attribute name (`agent_id`, not `agent`), every
    other field its default. Built positionally, a fifth of the time of Django's keyword
    constructor, which looks up each missing field's default (and makes an id that `values`
    then replaces): a thousand steps a request."""
    defaults = _ROW_DEFAULTS.get(model)
    if defaults is None:
        defaults = _ROW_DEFAULTS[model] = [
            (field.attname, field._get_default)  # type: ignore[attr-defined]
            for field in model._meta.concrete_fields
        ]
    return model(*[values[name] if name in values else default() for name, default in defaults])
