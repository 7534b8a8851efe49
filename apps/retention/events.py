"""What retention announces: the hook for the audit log (issue 27, item 3).

`activity_purged` is sent once per workspace and run of the retention task that deleted
something, with `workspace_id`, `before` (the cut-off) and `counts` ({"conversations",
"messages", "runs"}). The audit log records "retention deleted N ..."
entries by subscribing to it in its AppConfig.ready(), as webhooks listens to
apps.activity.events; nothing here needs to know it exists.
"""

from django.dispatch import Signal

activity_purged = Signal()
