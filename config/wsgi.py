import os

from django.core.wsgi import get_wsgi_application

from apps.common.garbage_collection import freeze_after_warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = freeze_after_warm_up(get_wsgi_application())

# Hybrid search (the default mode) embeds every query: the model loads now, beside the first
# requests, rather than inside the first search of each worker (1-3 s).
from apps.knowledge.embeddings import load_in_background  # noqa: E402 - needs the settings

load_in_background()
