from django.urls import path

from apps.retention import pages

app_name = "retention"

urlpatterns = [
    path("retention/", pages.retention_settings, name="retention_settings"),
]
