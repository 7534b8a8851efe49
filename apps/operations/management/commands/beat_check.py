"""`manage.py beat_check`: exit 0 when beat touched its heartbeat file recently, 1 otherwise.

Beat touches BEAT_HEARTBEAT_FILE on each tick of its loop (apps.operations.beat), at least
every CELERY_BEAT_MAX_LOOP_INTERVAL seconds, so run this on beat's machine:

    manage.py beat_check --max-age 90
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.operations.beat import heartbeat_age


class Command(BaseCommand):
    help = "Exit 0 when celery beat's heartbeat file is recent."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--max-age", type=float, default=90.0, help="seconds (default 90: three loops)"
        )

    def handle(self, *args, max_age=90.0, **options) -> None:
        path = Path(settings.BEAT_HEARTBEAT_FILE)
        age = heartbeat_age(path)
        if age is None:
            raise CommandError(f"beat has not run here: no heartbeat file at {path}")
        if age > max_age:
            raise CommandError(f"beat's last heartbeat was {age:.0f} s ago (over {max_age:g} s)")
        self.stdout.write(f"ok: beat's last heartbeat {age:.1f} s ago")
