"""Writes for Agents: configuration with revisions, archive and restore."""

from django.db import transaction
from django.utils import timezone

from apps.common.errors import Conflict, NotFound
from apps.workspaces import configuration
from apps.workspaces.audit import SYSTEM_ACTOR, Actor, audit_diff, audit_record
from apps.workspaces.models import Agent, AgentRevision, ApiKey, Workspace
from apps.workspaces.services.key_cache import bury_agent_keys


def _write_revision(
    *, agent: Agent, kind: str, changed: list[str], actor: Actor, restored_from: int | None = None
) -> AgentRevision:
    return AgentRevision.objects.create(
        agent=agent,
        number=agent.revision,
        kind=kind,
        restored_from=restored_from,
        configuration=configuration.snapshot(agent),
        changed_fields=changed,
        actor_type=actor.type,
        actor_id=actor.id,
        actor_name=actor.name[:254],
        created_at=agent.updated_at,
    )


def agent_create(
    *,
    workspace: Workspace,
    name: str,
    description: str = "",
    instructions: str = "",
    model_id: str | None = None,
    effort: str | None = None,
    knowledge_search_enabled: bool = True,
    allowed_origins: list[str] | None = None,
    actor: Actor = SYSTEM_ACTOR,
) -> Agent:
    """Create an active Agent and its revision 1."""
    fields = configuration.clean(
        {
            "name": name,
            "description": description,
            "instructions": instructions,
            "model_id": model_id,
            "effort": effort,
            "knowledge_search_enabled": knowledge_search_enabled,
            "allowed_origins": allowed_origins or [],
        }
    )
    now = timezone.now()
    with transaction.atomic():
        agent = Agent.objects.create(
            workspace=workspace, revision=1, created_at=now, updated_at=now, **fields
        )
        # The first revision sets every field.
        _write_revision(
            agent=agent,
            kind=AgentRevision.Kind.CREATED,
            changed=list(configuration.CONFIGURATION_FIELDS),
            actor=actor,
        )
        _audit(agent, "agent.created", audit_diff({}, configuration.snapshot(agent)), actor=actor)
    return agent


def _audit(agent: Agent, action: str, changes: dict | None = None, **kwargs) -> None:
    audit_record(
        workspace_id=agent.workspace_id,
        agent_id=agent.pk,
        action=action,
        target_type="agent",
        target_id=agent.pk,
        target_name=agent.name,
        changes=changes,
        **kwargs,
    )


def _agent_for_update(*, workspace_id: str, agent_id: str) -> Agent:
    agent = Agent.objects.select_for_update().filter(workspace_id=workspace_id, pk=agent_id).first()
    if agent is None:
        raise NotFound("No such Agent in this workspace.")
    return agent


def _apply_configuration(
    *, agent: Agent, target: dict, kind: str, actor: Actor, restored_from: int | None = None
) -> Agent:
    """Move a locked, active Agent to `target` and record the revision; no change, no revision."""
    if agent.status != Agent.Status.ACTIVE:
        raise Conflict("The Agent is archived; restore it before changing its configuration.")
    before = configuration.snapshot(agent)
    changed = configuration.changed_fields(before, target)
    if not changed:
        return agent
    for field in changed:
        setattr(agent, field, target[field])
    agent.revision += 1
    agent.updated_at = timezone.now()
    agent.save(update_fields=[*changed, "revision", "updated_at"])
    _write_revision(
        agent=agent, kind=kind, changed=changed, actor=actor, restored_from=restored_from
    )
    diff: dict = audit_diff(before, target, changed)
    if restored_from is not None:
        diff["restored_revision"] = restored_from
    action = "agent.revision_restored" if kind == AgentRevision.Kind.RESTORED else "agent.updated"
    _audit(agent, action, {**diff, "revision": agent.revision}, actor=actor)
    return agent


def agent_update(*, workspace_id: str, agent_id: str, changes: dict, actor: Actor) -> Agent:
    """Change some configuration fields; the result becomes the Agent's next revision.

    Sending the values the Agent already has changes nothing and writes no revision.
    """
    cleaned = configuration.clean(changes)
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        target = {**configuration.snapshot(agent), **cleaned}
        return _apply_configuration(
            agent=agent, target=target, kind=AgentRevision.Kind.UPDATED, actor=actor
        )


def agent_revision_restore(
    *, workspace_id: str, agent_id: str, revision_id: str, actor: Actor
) -> Agent:
    """Bring back an earlier configuration. The restore is itself a new revision, so it can
    be undone the same way; restoring the current configuration changes nothing."""
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        revision = AgentRevision.objects.filter(agent=agent, pk=revision_id).first()
        if revision is None:
            raise NotFound("No such revision for this Agent.")
        # Revisions are validated when written; clean() again so one written by an older
        # rule set cannot bring back a value today's rules refuse.
        target = {
            **configuration.snapshot(agent),
            **configuration.clean(
                {
                    field: revision.configuration[field]
                    for field in configuration.CONFIGURATION_FIELDS
                    if field in revision.configuration
                }
            ),
        }
        return _apply_configuration(
            agent=agent,
            target=target,
            kind=AgentRevision.Kind.RESTORED,
            actor=actor,
            restored_from=revision.number,
        )


def agent_archive(*, workspace_id: str, agent_id: str, acting_key: ApiKey | None = None) -> Agent:
    """Archive an Agent: its keys stop authenticating (401), its scheduled knowledge
    refreshes and webhook deliveries wait. Nothing is deleted; `agent_restore` undoes it."""
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        if agent.status == Agent.Status.ARCHIVED:
            raise Conflict("The Agent is already archived.")
        if acting_key is not None and acting_key.agent_id == agent.pk:
            raise Conflict(
                "A key cannot archive its own Agent: the key would stop working. Use a key "
                "of another Agent of the workspace, or the console."
            )
        others_active = (
            Agent.objects.filter(workspace_id=workspace_id, status=Agent.Status.ACTIVE)
            .exclude(pk=agent.pk)
            .exists()
        )
        if not others_active:
            raise Conflict(
                "This is the workspace's last active Agent; create or restore another first."
            )
        now = timezone.now()
        agent.status = Agent.Status.ARCHIVED
        agent.archived_at = now
        agent.updated_at = now
        # save() (not update()) so the post_save hook drops the Agent's keys from the cache.
        agent.save(update_fields=["status", "archived_at", "updated_at"])
        bury_agent_keys(agent)
        _audit(agent, "agent.archived", {"status": {"from": "active", "to": "archived"}})
    return agent


def agent_restore(*, workspace_id: str, agent_id: str) -> Agent:
    """Make an archived Agent active again: its keys, refreshes and deliveries resume."""
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        if agent.status == Agent.Status.ACTIVE:
            raise Conflict("The Agent is not archived.")
        agent.status = Agent.Status.ACTIVE
        agent.archived_at = None
        agent.updated_at = timezone.now()
        agent.save(update_fields=["status", "archived_at", "updated_at"])
        _audit(agent, "agent.restored", {"status": {"from": "archived", "to": "active"}})
    return agent
