"""A list's rows, described once (issue 14, "the list hot path").

A selector describes which rows a list holds as a `ListQuery`: a model and a few `Condition`s
(a model field compared with a value). The ORM reads it (`ListQuery.queryset`); being plain
data, it can also be written as SQL without building a QuerySet.
"""

from dataclasses import dataclass
from typing import Any

from django.db.models import Model, Q, QuerySet

# The comparisons a `Condition` may make, as Django lookups and as SQL.
OPERATORS = {"exact": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


@dataclass(frozen=True)
class Condition:
    """`field <lookup> value` on one model field (named as in the model, e.g. `agent`,
    `created_at`). The value is never None: "is null" is not a comparison SQL can bind."""

    field: str
    lookup: str
    value: Any

    def q(self) -> Q:
        return Q(**{f"{self.field}__{self.lookup}": self.value})


@dataclass(frozen=True)
class ListQuery:
    """The rows of one list: a model's rows meeting every condition."""

    model: type[Model]
    where: tuple[Condition, ...]

    def queryset(self) -> QuerySet:
        return self.model._default_manager.filter(*(condition.q() for condition in self.where))
