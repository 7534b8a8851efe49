from django.contrib.auth import views as auth_views
from django.urls import path

from apps.workspaces import agent_pages, audit_pages, pages, team_pages

app_name = "workspaces"

urlpatterns = [
    path("login/", pages.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("agent/switch/", pages.agent_switch, name="agent_switch"),
    path("api-keys/", pages.api_key_list_page, name="api_key_list"),
    path("api-keys/revoke/", pages.api_key_bulk_revoke, name="api_key_bulk_revoke"),
    path("api-keys/new/", pages.api_key_create_page, name="api_key_create"),
    path("api-keys/<str:key_id>/revoke/", pages.api_key_revoke_page, name="api_key_revoke"),
    path("team/", team_pages.team_page, name="team"),
    path("team/invite/", team_pages.invitation_create_page, name="invitation_create"),
    path(
        "team/invitations/<str:invitation_id>/revoke/",
        team_pages.invitation_revoke_page,
        name="invitation_revoke",
    ),
    path("team/members/<str:membership_id>/role/", team_pages.member_role_page, name="member_role"),
    path(
        "team/members/<str:membership_id>/remove/",
        team_pages.member_remove_page,
        name="member_remove",
    ),
    path(
        "team/members/<str:membership_id>/transfer/",
        team_pages.ownership_transfer_page,
        name="ownership_transfer",
    ),
    path("invite/<str:token>/", team_pages.invitation_accept_page, name="invitation_accept"),
    path("invite/<str:token>/join/", team_pages.invitation_join_page, name="invitation_join"),
    path("agents/", agent_pages.agent_list_page, name="agent_list"),
    path("agents/new/", agent_pages.agent_create_page, name="agent_create"),
    path("agents/<str:agent_id>/", agent_pages.agent_detail_page, name="agent_detail"),
    path("agents/<str:agent_id>/archive/", agent_pages.agent_archive_page, name="agent_archive"),
    path("agents/<str:agent_id>/restore/", agent_pages.agent_restore_page, name="agent_restore"),
    path(
        "agents/<str:agent_id>/revisions/<str:revision_id>/restore/",
        agent_pages.agent_revision_restore_page,
        name="agent_revision_restore",
    ),
    path("audit-log/", audit_pages.audit_log, name="audit_log"),
    path("audit-log/export/", audit_pages.audit_log_export, name="audit_log_export"),
]
