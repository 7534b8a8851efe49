"""What an Agent runtime observes: end users, conversations, their messages and model runs.

Ids come from the runtime (recording is idempotent by id); records without one get a
time-ordered id such as `run_01J...`. An id is unique per Agent only, never globally: two
workspaces may record the same `run_1`, and neither learns that the other did (docs/faults.md,
item 5). So each table has an internal row key (`row`), the public `id` is unique together with
the Agent, and the links between records (a run's conversation, a conversation's user) are
`(agent, id)` pairs: `ForeignObject`s over the plain `conversation_id` / `user_id` columns, with
composite foreign keys in PostgreSQL (migration 0003).

Every row carries its Agent, and every list is served by an index that starts with it, so a
page is one index range scan at any depth.

Django finds the models here; each table has its module (`users`, `conversations` with
messages, `runs`, `steps` with the spans waiting for their parent, `rollups`), and `links` holds
the Agent column and the same-Agent links they share. Callers import from
`apps.activity.models`.
"""

from apps.activity.models.conversations import Conversation, Message
from apps.activity.models.links import ID_MAX_LENGTH, SameAgentLink, agent_field
from apps.activity.models.rollups import Rollup, RollupLatency
from apps.activity.models.runs import END_STATES, Run, RunStatus, TokenUsage
from apps.activity.models.steps import PendingSpan, RunStep, StepKind, StepStatus
from apps.activity.models.users import EndUser

__all__ = [
    "END_STATES",
    "ID_MAX_LENGTH",
    "Conversation",
    "EndUser",
    "Message",
    "PendingSpan",
    "Rollup",
    "RollupLatency",
    "Run",
    "RunStatus",
    "RunStep",
    "SameAgentLink",
    "StepKind",
    "StepStatus",
    "TokenUsage",
    "agent_field",
]
