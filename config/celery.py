"""Celery application. Settings come from Django's settings under the CELERY_ namespace."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("agent_console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _make_filesystem_broker_folders(sender: Celery, **kwargs: object) -> None:
    """The embedded default's broker keeps messages in folders that kombu does not create.
    Web, worker and beat may each publish first, so whichever configures Celery makes them."""
    if sender.conf.broker_url != "filesystem://":
        return
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
