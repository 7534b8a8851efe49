"""Key services: expiry at authentication (cached or not), the granting and revoking rules the
console and the API share."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict, InsufficientScope, NotFound, Unauthorized
from apps.workspaces.models import ApiKey
from apps.workspaces.services import (
    api_key_authenticate,
    api_key_create,
    api_key_create_by_key,
    api_key_create_by_member,
    api_key_revoke,
)

pytestmark = pytest.mark.django_db


def test_expired_key_is_refused_even_when_cached(agent, owner, time_machine, settings):
    time_machine.move_to("2026-05-01T09:00:00Z", tick=False)
    key, raw = api_key_create(
        agent=agent,
        name="Short",
        scopes=["runs:read"],
        created_by=owner,
        expires_at=timezone.now() + timedelta(hours=1),
    )
    assert api_key_authenticate(raw_key=raw)[0].pk == key.pk  # now cached (with Redis)
    time_machine.move_to("2026-05-01T10:00:00Z", tick=False)
    with pytest.raises(Unauthorized, match=r"expired at 2026-05-01T10:00:00.000Z"):
        api_key_authenticate(raw_key=raw)
    key.refresh_from_db()
    assert key.status == "expired" and not key.is_active


def test_expiry_must_be_in_the_future(agent, owner):
    with pytest.raises(BadRequest, match="expires_at"):
        api_key_create(
            agent=agent,
            name="Past",
            scopes=["runs:read"],
            expires_at=timezone.now() - timedelta(seconds=1),
        )


def test_members_cannot_grant_owner_scopes_owners_can(agent, owner, member):
    with pytest.raises(InsufficientScope, match="webhooks:read"):
        api_key_create_by_member(
            agent=agent, user=member, name="m", scopes=["runs:read", "webhooks:read"]
        )
    assert not ApiKey.objects.exists()
    key, _ = api_key_create_by_member(
        agent=agent, user=owner, name="o", scopes=["runs:read", "webhooks:read"]
    )
    assert key.created_by == owner


def test_members_revoke_only_their_own_keys_owners_any(agent, owner, member):
    owners_key, _ = api_key_create(agent=agent, name="o", scopes=["runs:read"], created_by=owner)
    members_key, _ = api_key_create(agent=agent, name="m", scopes=["runs:read"], created_by=member)
    with pytest.raises(InsufficientScope):
        api_key_revoke(agent=agent, key_id=owners_key.pk, by_user=member)
    assert api_key_revoke(agent=agent, key_id=members_key.pk, by_user=member).revoked_at
    other, _ = api_key_create(agent=agent, name="m2", scopes=["runs:read"], created_by=member)
    assert api_key_revoke(agent=agent, key_id=other.pk, by_user=owner).revoked_at
    with pytest.raises(Conflict):
        api_key_revoke(agent=agent, key_id=other.pk, by_user=owner)


def test_revoke_is_scoped_to_the_agent(agent, sibling_agent, owner):
    key, _ = api_key_create(agent=sibling_agent, name="s", scopes=["runs:read"], created_by=owner)
    with pytest.raises(NotFound):
        api_key_revoke(agent=agent, key_id=key.pk, by_user=owner)


def test_key_made_by_a_key_is_narrower_and_never_delegates_key_creation(agent, owner):
    parent, _ = api_key_create(
        agent=agent,
        name="p",
        scopes=["api_keys:create", "auth_tokens:create", "runs:read"],
        created_by=owner,
    )
    child, raw = api_key_create_by_key(
        parent=parent, agent=agent, name="c", scopes=["runs:read", "auth_tokens:create"]
    )
    assert (child.parent_id, child.created_by_id) == (parent.pk, owner.pk)
    with pytest.raises(BadRequest, match="api_keys:create"):
        api_key_create_by_key(parent=parent, agent=agent, name="c", scopes=["api_keys:create"])
    with pytest.raises(InsufficientScope, match="users:read"):
        api_key_create_by_key(parent=parent, agent=agent, name="c", scopes=["users:read"])
    api_key_revoke(agent=agent, key_id=parent.pk, by_user=owner)
    assert api_key_authenticate(raw_key=raw)[0].pk == child.pk


def test_key_made_by_a_key_stays_in_the_workspace(agent, other_agent, owner):
    parent, _ = api_key_create(
        agent=agent,
        name="p",
        scopes=["api_keys:create", "auth_tokens:create", "runs:read"],
        created_by=owner,
    )
    with pytest.raises(NotFound):
        api_key_create_by_key(parent=parent, agent=other_agent, name="c", scopes=["runs:read"])
