app_name = "webhooks"

urlpatterns: list = []
