from django.urls import path

from apps.usage import pages

app_name = "usage"

urlpatterns = [
    path("usage/", pages.usage_overview, name="usage_overview"),
    path("usage/limit/", pages.usage_limit, name="usage_limit"),
    path("usage/export.csv", pages.usage_export, name="usage_export"),
]
