"""`manage.py metrics_reset`: empty PROMETHEUS_MULTIPROC_DIR before a machine's processes start.

Each process writes its samples to files named by its pid there, and /metrics adds up every
file: files of a previous start would count again (and a reused pid would add to them). Run it
before starting web, workers and beat of a machine (`make run` does; in production an
ExecStartPre or an init container), never while they run.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Empty the metrics folder (PROMETHEUS_MULTIPROC_DIR) before the processes start."

    def handle(self, *args, **options) -> None:
        folder = settings.PROMETHEUS_MULTIPROC_DIR
        folder.mkdir(parents=True, exist_ok=True)
        removed = 0
        for path in folder.glob("*.db"):
            path.unlink(missing_ok=True)
            removed += 1
        if options["verbosity"]:
            self.stdout.write(f"ok: {removed} files removed from {folder}")
