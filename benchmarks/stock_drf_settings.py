"""Settings for the stock-DRF baseline of benchmarks/api_lists.py: the project's settings with
DRF's defaults back (no key auth, scopes or rate limits) and a ModelViewSet over runs."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.stock_drf_urls"
REST_FRAMEWORK = {
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "PAGE_SIZE": 20,
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
}
