from django.urls import path

from apps.tools import pages

app_name = "tools"

urlpatterns = [
    path("", pages.server_list, name="server_list"),
    path("add/", pages.server_add, name="server_add"),
    path("<str:server_id>/", pages.server_detail, name="server_detail"),
    path("<str:server_id>/discover/", pages.server_discover, name="server_discover"),
    path("<str:server_id>/toggle/", pages.server_toggle, name="server_toggle"),
    path("<str:server_id>/delete/", pages.server_delete, name="server_delete"),
    path("<str:server_id>/tools/<path:name>/toggle/", pages.tool_toggle, name="tool_toggle"),
]
