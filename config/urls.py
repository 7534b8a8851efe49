from django.conf import settings
from django.contrib import admin
from django.shortcuts import redirect
from django.urls import include, path

from apps.api.errors import error_response
from apps.api.middleware import is_api_path
from apps.common import errors
from apps.mcp_server.urls import oauth_urlpatterns
from apps.workspaces.console import navigation


def home(request):
    """The console's front door: the first section of the navigation, or sign-in."""
    if not request.user.is_authenticated:
        return redirect(settings.LOGIN_URL)
    items = navigation()
    return redirect(items[0]["url"] if items else "workspaces:api_key_list")


urlpatterns = [
    path("", home, name="home"),
    path("v1/", include("config.api_urls")),
    path("v1", lambda request: redirect("api-docs")),
    path("admin/", admin.site.urls),
    path("", include("apps.workspaces.urls")),
    path("", include("apps.activity.urls")),
    path("knowledge/", include("apps.knowledge.urls")),
    path("webhooks/", include("apps.webhooks.urls")),
    path("", include("apps.usage.urls")),
    path("scores/", include("apps.scores.urls")),
    path("tools/", include("apps.tools.urls")),
    path("", include("apps.mcp_server.urls")),
    path("", include("apps.retention.urls")),
    path("", include((oauth_urlpatterns, "oauth2_provider"))),
]

# Uploaded files are never served from MEDIA_ROOT by address, in any mode (not even under
# DEBUG, as `make run` runs): only through the views that check who asks (a knowledge file's
# download on its document page, docs/knowledge.md).


def handler404(request, exception=None):
    from django.views.defaults import page_not_found

    if is_api_path(request.path):
        return error_response(errors.NotFound())
    return page_not_found(request, exception)


def handler500(request):
    from django.views.defaults import server_error

    if is_api_path(request.path):
        return error_response(errors.ServiceError())
    return server_error(request)
