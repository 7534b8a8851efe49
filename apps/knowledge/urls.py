from django.urls import path

from apps.knowledge import document_pages, pages
from apps.knowledge.gaps import pages as gap_pages

app_name = "knowledge"

urlpatterns = [
    path("", pages.document_list, name="document_list"),
    path("upload/", pages.document_upload, name="document_upload"),
    path("urls/", pages.document_add_url, name="document_add_url"),
    path("search/", pages.document_search, name="document_search"),
    path("bulk/", pages.document_bulk, name="document_bulk"),
    # Unanswered questions (apps.knowledge.gaps), before the document paths they would match.
    path("unanswered/", gap_pages.gap_list, name="gap_list"),
    path("unanswered/<str:gap_id>/", gap_pages.gap_detail, name="gap_detail"),
    path("unanswered/<str:gap_id>/resolve/", gap_pages.gap_resolve, name="gap_resolve"),
    path("unanswered/<str:gap_id>/reopen/", gap_pages.gap_reopen, name="gap_reopen"),
    path("<str:document_id>/", document_pages.document_detail, name="document_detail"),
    path(
        "<str:document_id>/search/",
        document_pages.document_search_within,
        name="document_search_within",
    ),
    path("<str:document_id>/row/", document_pages.document_row, name="document_row"),
    path("<str:document_id>/rename/", document_pages.document_rename, name="document_rename"),
    path("<str:document_id>/toggle/", document_pages.document_toggle, name="document_toggle"),
    path("<str:document_id>/refresh/", document_pages.document_refresh, name="document_refresh"),
    path("<str:document_id>/schedule/", document_pages.document_schedule, name="document_schedule"),
    path("<str:document_id>/retry/", document_pages.document_retry, name="document_retry"),
    path("<str:document_id>/download/", document_pages.document_download, name="document_download"),
    path("<str:document_id>/markdown/", document_pages.document_markdown, name="document_markdown"),
    path("<str:document_id>/delete/", document_pages.document_delete, name="document_delete"),
]
