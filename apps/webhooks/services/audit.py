"""The audit entries of a webhook's changes (apps.workspaces.audit), in one shape."""

from __future__ import annotations

from apps.webhooks.models import Webhook
from apps.workspaces.audit import Actor, audit_record


def webhook_audit(
    webhook: Webhook, action: str, changes: dict | None = None, *, actor: Actor | None = None
) -> None:
    """One audit entry about the Agent's webhook, in the caller's transaction."""
    audit_record(
        workspace_id=webhook.agent.workspace_id,
        agent_id=webhook.agent_id,
        action=action,
        target_type="webhook",
        target_id=str(webhook.pk),
        target_name=webhook.agent.name,
        changes=changes,
        actor=actor,
    )
