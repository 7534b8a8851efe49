"""django-oauth-toolkit registers its models in `/admin/`, where access and refresh tokens (and
grant codes) would show in the clear. Staff manage connected applications through the console's
rules instead (docs/team.md, "The admin"), so those registrations are removed."""

from django.contrib import admin
from oauth2_provider.models import AccessToken, Application, Grant, IDToken, RefreshToken

for model in (AccessToken, RefreshToken, Grant, IDToken, Application):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
