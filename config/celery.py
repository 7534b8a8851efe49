"""Celery application. Settings come from Django's settings under the CELERY_ namespace."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("agent_console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Tasks a person is waiting for (a document's first extraction, a refresh they pressed, a tool
# server's discovery) or that are short and keep other work moving (the sweepers). They go to the
# interactive queue (CELERY_INTERACTIVE_QUEUE), which has worker processes of its own, so they
# never wait behind the bulk queue's embedding: on one queue a 40-byte upload waited 142 s behind
# the embedding of 8 earlier documents (docs/performance.md).
INTERACTIVE_TASKS = frozenset(
    {
        "knowledge.ingest",
        "knowledge.refresh",
        "knowledge.refresh_due",
        "knowledge.recover_stalled",
        "tools.discover",
        "tools.discover_due",
    }
)
# Webhook deliveries and their dispatcher: the webhook queue (CELERY_WEBHOOK_QUEUE), with workers
# of its own. A delivery to a dead endpoint takes up to connect + read timeout (15 s); on the
# interactive queue 2,767 of them once sat ahead of three small uploads (issue 34).
WEBHOOK_TASKS = frozenset({"webhooks.deliver", "webhooks.dispatch_due"})


def route_task(name: str, args, kwargs, options, task=None, **kw) -> dict | None:
    """Celery router (CELERY_TASK_ROUTES): interactive tasks and webhook tasks to their queues,
    the rest (embedding, clean-ups) to the default one. Read at send time, so a test may rename
    the queues."""
    if name in INTERACTIVE_TASKS:
        return {"queue": app.conf.interactive_queue}
    if name in WEBHOOK_TASKS:
        return {"queue": app.conf.webhook_queue}
    return None


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
