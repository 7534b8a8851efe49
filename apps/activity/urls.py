from django.urls import path

from apps.activity import list_actions, pages

app_name = "activity"

urlpatterns = [
    path("overview/", pages.overview, name="overview"),
    path("performance/", pages.performance, name="performance"),
    path(
        "conversations/export/",
        list_actions.list_export,
        {"name": "conversations"},
        name="conversation_export",
    ),
    path("users/export/", list_actions.list_export, {"name": "users"}, name="user_export"),
    path("runs/export/", list_actions.list_export, {"name": "runs"}, name="run_export"),
    path(
        "conversations/bulk/",
        list_actions.list_bulk,
        {"name": "conversations"},
        name="conversation_bulk",
    ),
    path("users/bulk/", list_actions.list_bulk, {"name": "users"}, name="user_bulk"),
    path("runs/bulk/", list_actions.list_bulk, {"name": "runs"}, name="run_bulk"),
    path("conversations/", pages.conversation_list, name="conversation_list"),
    path(
        "conversations/<str:conversation_id>/",
        pages.conversation_detail,
        name="conversation_detail",
    ),
    path("users/", pages.user_list, name="user_list"),
    path("users/suggest/", pages.user_suggest, name="user_suggest"),
    path("users/<str:user_id>/", pages.user_detail, name="user_detail"),
    path("runs/", pages.run_list, name="run_list"),
    path("runs/<str:run_id>/", pages.run_detail, name="run_detail"),
    path("runs/<str:run_id>/steps/<str:step_id>/", pages.step_detail, name="step_detail"),
]
