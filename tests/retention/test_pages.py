"""The Data retention page without a browser: owners only, bad input changes nothing."""

import pytest

from apps.retention.models import RetentionPolicy

pytestmark = pytest.mark.django_db


def test_members_cannot_read_or_change_retention(member_client, agent):
    assert member_client.get("/retention/").status_code == 403
    assert member_client.post("/retention/", {"activity": "30"}).status_code == 403
    assert not RetentionPolicy.objects.exists()


def test_an_unknown_period_is_refused_and_changes_nothing(owner_client, agent):
    response = owner_client.post("/retention/", {"activity": "7"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not RetentionPolicy.objects.exists()
    assert owner_client.post("/retention/", {"activity": "365"}).status_code == 302
    assert RetentionPolicy.objects.get(workspace_id=agent.workspace_id).activity_days == 365


def test_the_command_sets_and_refuses(workspace):
    from django.core.management import CommandError, call_command

    call_command("retention_set", workspace.pk, days="30")
    assert RetentionPolicy.objects.get(workspace=workspace).activity_days == 30
    call_command("retention_set", workspace.pk, days="forever")
    assert RetentionPolicy.objects.get(workspace=workspace).activity_days is None
    for bad in ("7", "soon"):
        with pytest.raises(CommandError):
            call_command("retention_set", workspace.pk, days=bad)
    assert RetentionPolicy.objects.get(workspace=workspace).activity_days is None
