"""What retention announces.

`activity_purged` is sent once per workspace and run of the retention task that deleted
something, with `workspace_id`, `before` (the cut-off) and `counts` ({"conversations",
"messages", "runs", "webhook_deliveries"}), for whoever wants to know (metrics, say). The audit
log needs no listener: the audit log sits on the workspaces floor below this app, so
`retention_apply` writes its `retention.activity_purged` entry itself (docs/audit-log.md).
"""

from django.dispatch import Signal

activity_purged = Signal()
