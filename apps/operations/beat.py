"""Beat's heartbeat: the scheduler touches BEAT_HEARTBEAT_FILE on each tick of its loop, so a
supervisor can tell a live beat from a hung or dead one (`manage.py beat_check`)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from celery.beat import PersistentScheduler
from django.conf import settings

logger = logging.getLogger("apps.operations")

# At most one touch per this many seconds (beat ticks at least every 5 s here).
TOUCH_INTERVAL_SECONDS = 1.0


class HeartbeatScheduler(PersistentScheduler):
    _last_touch = 0.0

    def tick(self, *args, **kwargs):
        interval = super().tick(*args, **kwargs)
        now = time.monotonic()
        if now - self._last_touch >= TOUCH_INTERVAL_SECONDS:
            self._last_touch = now
            touch(Path(settings.BEAT_HEARTBEAT_FILE))
        return interval


def touch(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path)
    except OSError:
        logger.warning("beat could not touch its heartbeat file %s", path, exc_info=True)


def heartbeat_age(path: Path) -> float | None:
    """Seconds since beat last touched `path`; None when it never did."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return None
