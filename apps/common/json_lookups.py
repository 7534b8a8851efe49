"""`contains` on a JSON array of strings, on SQLite too.

Runs keep the tools they called and the documents they retrieved as JSON arrays, filtered with
`field__contains=[value]` (a GIN index answers it on PostgreSQL). Django does not implement
`contains` on SQLite, the embedded default `make run` uses, so those filters and the document
page's run counts failed there. On SQLite an array contains the given items when each is one of
its elements (`json_each`); nested values are refused as before.
"""

from django.db import NotSupportedError
from django.db.models import JSONField
from django.db.models.fields.json import DataContains


class ArrayContains(DataContains):
    def as_sqlite(self, compiler, connection):
        items = self.rhs
        if not isinstance(items, list) or any(isinstance(i, dict | list) for i in items):
            raise NotSupportedError("On SQLite, contains takes a list of plain values.")
        lhs, lhs_params = self.process_lhs(compiler, connection)
        if not items:
            return "1 = 1", ()
        # lhs is the compiled column expression, never user input; the items are parameters.
        each = f"EXISTS (SELECT 1 FROM json_each({lhs}) WHERE json_each.value = %s)"  # noqa: S608
        params: list = []
        for item in items:
            params += [*lhs_params, item]
        return " AND ".join([each] * len(items)), tuple(params)


def register() -> None:
    JSONField.register_lookup(ArrayContains)
