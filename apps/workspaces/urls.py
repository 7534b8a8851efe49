from django.contrib.auth import views as auth_views
from django.urls import path

from apps.workspaces import pages

app_name = "workspaces"

urlpatterns = [
    path("login/", pages.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("agent/switch/", pages.agent_switch, name="agent_switch"),
    path("api-keys/", pages.api_key_list_page, name="api_key_list"),
    path("api-keys/new/", pages.api_key_create_page, name="api_key_create"),
    path("api-keys/<str:key_id>/revoke/", pages.api_key_revoke_page, name="api_key_revoke"),
]
