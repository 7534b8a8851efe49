app_name = "activity"

urlpatterns: list = []
