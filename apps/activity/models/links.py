"""How an activity row belongs to its Agent: the Agent column every table leads with, and the
links between records of one Agent (a run's conversation, a conversation's user) as `(agent, id)`
pairs, since an id is unique per Agent only (see the package's docstring).
"""

from typing import Any

from django.db import models
from django.db.models.fields.related_descriptors import ForwardManyToOneDescriptor

ID_MAX_LENGTH = 64


class _SameAgentDescriptor(ForwardManyToOneDescriptor):
    """`run.conversation = x` for a link whose columns include the record's own `agent_id`.

    Django would copy every column of the link: unlinking (`= None`) would clear the Agent too,
    and linking a record of another Agent would move this one. Neither may happen.
    """

    def __set__(self, instance: Any, value: Any) -> None:
        agent_id = instance.__dict__.get("agent_id")
        if value is not None and agent_id is not None and value.agent_id != agent_id:
            raise ValueError("A record can only be linked to a record of its own Agent.")
        super().__set__(instance, value)
        if value is None:
            instance.agent_id = agent_id


class SameAgentLink(models.ForeignObject):
    """A link to another record of the same Agent: `(agent, <through>)` -> `(agent, id)`.

    Django does nothing on delete: PostgreSQL's composite foreign keys cascade (or set the id to
    null), and records are only ever deleted with their Agent.
    """

    forward_related_accessor_class = _SameAgentDescriptor

    def __init__(self, to: Any, *, through: str | None = None, **kwargs: Any) -> None:
        # `through` names the column holding the linked id; clones pass the full kwargs instead.
        if through is not None:
            kwargs.setdefault("from_fields", ["agent", through])
            kwargs.setdefault("to_fields", ["agent", "id"])
        kwargs.setdefault("on_delete", models.DO_NOTHING)
        super().__init__(to, **kwargs)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        # Migrations see a plain ForeignObject: the descriptor changes no schema.
        return name, "django.db.models.ForeignObject", args, kwargs


def agent_field(*, constraint: bool = True) -> models.ForeignKey:
    """The Agent owning an activity row. No index of its own: each table's unique (agent, id)
    index and every list index lead with the Agent and serve any lookup by it; one on the
    Agent alone (and Django's `_like` twin, for LIKE) served nothing and cost each inserted row
    two more index entries (docs/performance.md, "Recording").

    `constraint=False` for rows whose composite link already names an existing row of the same
    Agent (a run's or message's conversation, a step's run): PostgreSQL checks a foreign key
    per inserted row by locking the Agent's row (FOR KEY SHARE), and every recording of one
    Agent sharing that one row's lock cost a batch of a hundred runs a third of its speed."""
    return models.ForeignKey(
        "workspaces.Agent",
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        db_constraint=constraint,
    )
