"""Console pages for activity, one module per screen:

- `overview`: the Overview and Performance charts;
- `conversations`: the Conversations list and a conversation's transcript;
- `users`: the Users list, a user's page and the user filter box's suggestions;
- `runs`: the Runs list, a run's trace and a step's body;
- `lists`: what the three lists share: paging, the search and user boxes, the filters.

Thin: the same selectors and filter rules as the API; HTMX requests get the table partial.
A bad filter or cursor shows its message above the table instead of an error page.
Exports and bulk actions of the lists live in `apps.activity.list_actions`.
"""

from apps.activity.pages.conversations import conversation_detail, conversation_list
from apps.activity.pages.overview import overview, performance
from apps.activity.pages.runs import run_detail, run_list, step_detail
from apps.activity.pages.users import user_detail, user_list, user_suggest

__all__ = [
    "conversation_detail",
    "conversation_list",
    "overview",
    "performance",
    "run_detail",
    "run_list",
    "step_detail",
    "user_detail",
    "user_list",
    "user_suggest",
]
