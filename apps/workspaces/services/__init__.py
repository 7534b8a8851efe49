"""Every write of workspaces, Agents and API keys happens in this package, split by subject:

- `workspaces`: a workspace and its owner's membership;
- `agents`: Agents, their configuration with revisions, archive and restore;
- `api_keys`: creating keys and who may grant what, revoking them, authenticating a bearer key;
- `members`: the team: roles, removal and leaving, ownership, offboarding;
- `invitations`: invitations to the team: created, revoked, checked, accepted;
- `team_checks`: what every team change checks first (an owner asks, an owner remains);
- `key_cache`: the cache authentication reads, and the writes that keep it coherent (the
  revocation that takes effect on the next request, the `last_used_at` touch).

Callers import from `apps.workspaces.services`; the names below are the package's public face.
"""

from apps.workspaces.audit import SYSTEM_ACTOR, Actor, actor_for_key, actor_for_user
from apps.workspaces.services.agents import (
    agent_archive,
    agent_create,
    agent_restore,
    agent_revision_restore,
    agent_update,
)
from apps.workspaces.services.api_keys import (
    api_key_authenticate,
    api_key_create,
    api_key_create_by_key,
    api_key_create_by_member,
    api_key_grant_check,
    api_key_manager_check,
    api_key_revoke,
    api_key_usable_check,
)
from apps.workspaces.services.invitations import (
    InvitationCreated,
    invitation_accept,
    invitation_accept_with_new_account,
    invitation_by_token,
    invitation_check,
    invitation_create,
    invitation_revoke,
)
from apps.workspaces.services.key_cache import (
    api_key_by_lookup_id_counted,
    api_key_cache_forget,
    api_key_cache_forget_for_agent,
    api_key_revoke_now,
)
from apps.workspaces.services.members import (
    MemberRemoval,
    member_remove,
    member_role_change,
    ownership_transfer,
    person_offboard,
)
from apps.workspaces.services.workspaces import workspace_create

__all__ = [
    "InvitationCreated",
    "MemberRemoval",
    "invitation_accept",
    "invitation_accept_with_new_account",
    "invitation_by_token",
    "invitation_check",
    "invitation_create",
    "invitation_revoke",
    "member_remove",
    "member_role_change",
    "ownership_transfer",
    "person_offboard",
    "SYSTEM_ACTOR",
    "Actor",
    "actor_for_key",
    "actor_for_user",
    "agent_archive",
    "agent_create",
    "agent_restore",
    "agent_revision_restore",
    "agent_update",
    "api_key_authenticate",
    "api_key_by_lookup_id_counted",
    "api_key_cache_forget",
    "api_key_cache_forget_for_agent",
    "api_key_create",
    "api_key_create_by_key",
    "api_key_create_by_member",
    "api_key_grant_check",
    "api_key_manager_check",
    "api_key_revoke",
    "api_key_revoke_now",
    "api_key_usable_check",
    "workspace_create",
]
