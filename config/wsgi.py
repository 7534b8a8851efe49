import os

from django.core.wsgi import get_wsgi_application

from apps.common.garbage_collection import freeze_after_warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = freeze_after_warm_up(get_wsgi_application())
