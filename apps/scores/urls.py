from django.urls import path

from apps.scores import bulk_pages, pages

app_name = "scores"

urlpatterns = [
    path("", pages.score_list, name="score_list"),
    path("bulk/", pages.score_bulk, name="score_bulk"),
    path("bulk-add/", bulk_pages.score_bulk_add, name="score_bulk_add"),
    path("add/", pages.score_add, name="score_add"),
    path("panel/", pages.score_panel, name="score_panel"),
    path("overview/", pages.score_overview, name="score_overview"),
    path("<str:score_id>/remove/", pages.score_remove, name="score_remove"),
    path("configs/", pages.config_create, name="config_create"),
    path("configs/<str:config_id>/archive/", pages.config_archive, name="config_archive"),
]
