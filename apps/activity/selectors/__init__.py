"""Reads of activity, shared by the API and the console: always the Agent first, one module per
list:

- `runs`: the Runs list, a run, its steps and messages, the console's filter suggestions;
- `conversations`: the Conversations list, a conversation, its messages, totals and runs;
- `users`: the Users list, a user, the user a filter box names, a user's usage;
- `filters`: what every list shares: its filters, checked here once so the API answers 400 and
  the console shows the same message, the Agent's condition, the console's choice of order.

Each list has one keyset (its order) and a few filters. Every filter combination stays an index
range scan: see the indexes in apps.activity.models. Callers import from
`apps.activity.selectors`; the names below are the package's public face.
"""

from apps.activity.selectors.conversations import (
    CONVERSATION_KEYSET,
    CONVERSATION_SORTS,
    MESSAGE_KEYSET,
    ConversationTotals,
    conversation_find,
    conversation_get,
    conversation_list,
    conversation_list_sorted,
    conversation_query,
    conversation_runs,
    conversation_totals,
    message_list,
    message_query,
    transcript_messages,
)
from apps.activity.selectors.filters import (
    CONVERSATION_FILTERS,
    RUN_FILTERS,
    STATUSES,
    USER_FILTERS,
    Filter,
    filters_parse,
)
from apps.activity.selectors.runs import (
    RECENT_RUNS_FOR_CHOICES,
    RUN_KEYSET,
    RUN_SORTS,
    STEP_KEYSET,
    document_run_counts,
    recent_run_values,
    run_get,
    run_list,
    run_list_sorted,
    run_messages,
    run_query,
    run_trace,
    step_get,
    step_list,
)
from apps.activity.selectors.users import (
    USER_KEYSET,
    USER_PICKER_LIMIT,
    USER_SORTS,
    UserUsage,
    end_user_find,
    user_get,
    user_list,
    user_pick,
    user_query,
    user_recent_conversations,
    user_recent_runs,
    user_usage,
)

__all__ = [
    "CONVERSATION_FILTERS",
    "CONVERSATION_KEYSET",
    "CONVERSATION_SORTS",
    "MESSAGE_KEYSET",
    "RECENT_RUNS_FOR_CHOICES",
    "RUN_FILTERS",
    "RUN_KEYSET",
    "RUN_SORTS",
    "STATUSES",
    "STEP_KEYSET",
    "USER_FILTERS",
    "USER_KEYSET",
    "USER_PICKER_LIMIT",
    "USER_SORTS",
    "ConversationTotals",
    "Filter",
    "UserUsage",
    "conversation_find",
    "conversation_get",
    "conversation_list",
    "conversation_list_sorted",
    "conversation_query",
    "conversation_runs",
    "conversation_totals",
    "document_run_counts",
    "end_user_find",
    "filters_parse",
    "message_list",
    "message_query",
    "recent_run_values",
    "run_get",
    "run_list",
    "run_list_sorted",
    "run_messages",
    "run_query",
    "run_trace",
    "step_get",
    "step_list",
    "transcript_messages",
    "user_get",
    "user_list",
    "user_pick",
    "user_query",
    "user_recent_conversations",
    "user_recent_runs",
    "user_usage",
]
