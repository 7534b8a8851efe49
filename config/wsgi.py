import os
import threading
from importlib import import_module

from django.core.wsgi import get_wsgi_application

from apps.common.garbage_collection import freeze_after_warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = freeze_after_warm_up(get_wsgi_application())

# Hybrid search (the default mode) embeds every query: the model loads now, beside the first
# requests, rather than inside the first search of each worker (1-3 s).
from apps.common.lexical import warm_up_in_background  # noqa: E402
from apps.knowledge.embeddings import load_in_background  # noqa: E402 - needs the settings

load_in_background()
# Every search reads the query's language and stop words: their models load now too (the first
# keyword search of a fresh process took 0.7-2.4 s).
warm_up_in_background()
# The /mcp endpoint's SDK (0.8 s of CPU to import) loads with its first request otherwise
# (apps/mcp_server/urls.py).
threading.Thread(
    target=import_module, args=("apps.mcp_server.endpoint",), name="mcp-import", daemon=True
).start()
