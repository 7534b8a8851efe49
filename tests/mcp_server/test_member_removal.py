"""A person who leaves a workspace, or is removed, stops acting there through the applications
they connected: the grant ends with the removal (apps.workspaces.events.member_removed)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, RefreshToken

from apps.mcp_server.models import ConnectedApplication
from apps.mcp_server.resource_tokens import resource_token_sign
from apps.workspaces.models import AuditEvent, Membership
from apps.workspaces.services import member_remove
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def test_removal_ends_the_members_connected_applications(
    grant_for, owner, member, workspace, agent
):
    grant_for(member, agent, ["runs:read"])
    grant_for(owner, agent, ["runs:read"])
    theirs = ConnectedApplication.objects.get(user=member)
    raw, _token = resource_token_sign(
        connection_id=theirs.pk,
        grant_key=theirs.grant_key,
        scopes=["runs:read"],
        audience="http://testserver/v1",
        not_after=timezone.now() + timedelta(hours=1),
    )
    assert ApiClient(raw).get("/v1/runs").status == 200

    member_remove(
        workspace=workspace,
        membership_id=Membership.objects.get(user=member).pk,
        by_user=owner,
    )

    answer = ApiClient(raw).get("/v1/runs")
    assert answer.status == 401 and "revoked" in answer.json()["message"]
    theirs.refresh_from_db()
    assert theirs.revoked_at is not None and theirs.grant_key.revoked_at is not None
    assert not AccessToken.objects.filter(user=member).exists()
    assert not RefreshToken.objects.filter(user=member).exists()
    # The owner's own connection is untouched.
    assert ConnectedApplication.objects.get(user=owner).revoked_at is None
    assert AccessToken.objects.filter(user=owner).exists()


def test_removal_records_each_ended_connection_as_a_disconnection(
    grant_for, owner, member, workspace, agent
):
    """Before: the grant ended with no `connected_app.disconnected` entry."""
    grant_for(member, agent, ["runs:read"])
    theirs = ConnectedApplication.objects.get(user=member)
    member_remove(
        workspace=workspace,
        membership_id=Membership.objects.get(user=member).pk,
        by_user=owner,
    )
    (entry,) = AuditEvent.objects.filter(workspace=workspace, action="connected_app.disconnected")
    assert (entry.target_type, entry.target_id, entry.agent_id) == (
        "connected_app",
        theirs.pk,
        agent.pk,
    )
    assert entry.target_name == theirs.grant_key.name
