from django.contrib.auth import views as auth_views
from django.urls import path

from apps.workspaces import agent_pages, audit_pages, pages

app_name = "workspaces"

urlpatterns = [
    path("login/", pages.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("agent/switch/", pages.agent_switch, name="agent_switch"),
    path("api-keys/", pages.api_key_list_page, name="api_key_list"),
    path("api-keys/revoke/", pages.api_key_bulk_revoke, name="api_key_bulk_revoke"),
    path("api-keys/new/", pages.api_key_create_page, name="api_key_create"),
    path("api-keys/<str:key_id>/revoke/", pages.api_key_revoke_page, name="api_key_revoke"),
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
