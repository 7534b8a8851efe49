from django.urls import path

from apps.webhooks import pages

app_name = "webhooks"

urlpatterns = [
    path("", pages.webhook_detail, name="webhook_detail"),
    path("config/", pages.webhook_config, name="webhook_config"),
    path("enable/", pages.webhook_enable, name="webhook_enable"),
    path("pause/", pages.webhook_pause, name="webhook_pause"),
    path("secret/", pages.webhook_secret, name="webhook_secret"),
    path("test/", pages.webhook_test, name="webhook_test"),
    path("deliveries/retry/", pages.delivery_bulk_retry, name="delivery_bulk_retry"),
    path("deliveries/recover/", pages.delivery_recover, name="delivery_recover"),
    path("deliveries/export/", pages.delivery_export, name="delivery_export"),
    path("deliveries/<str:delivery_id>/", pages.delivery_detail, name="delivery_detail"),
    path("deliveries/<str:delivery_id>/row/", pages.delivery_row, name="delivery_row"),
    path("deliveries/<str:delivery_id>/retry/", pages.delivery_retry, name="delivery_retry"),
]
