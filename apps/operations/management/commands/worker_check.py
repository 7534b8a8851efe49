"""`manage.py worker_check`: exit 0 when the Celery worker(s) answer a ping, 1 otherwise.

For a supervisor's health check (Docker HEALTHCHECK, a Kubernetes exec probe, systemd):

    manage.py worker_check --hostname interactive@$(hostname)   # that worker answers
    manage.py worker_check --queue interactive                  # someone serves the queue

It goes through the broker (Celery's remote control), so it fails when the broker is down too:
a worker that cannot reach its broker serves nothing.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Exit 0 when the Celery worker (or a worker of the queue) answers a ping."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--hostname", help="the worker's node name, e.g. bulk@web-1")
        parser.add_argument("--queue", help="pass when at least one worker consumes this queue")
        parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")

    def handle(self, *args, hostname=None, queue=None, timeout=3.0, **options) -> None:
        from config.celery import app

        destination = [hostname] if hostname else None
        try:
            if queue:
                inspector = app.control.inspect(destination=destination, timeout=timeout)
                replies = inspector.active_queues() or {}
                answering = sorted(
                    name
                    for name, queues in replies.items()
                    if any(entry.get("name") == queue for entry in queues or [])
                )
                what = f"worker consuming {queue!r}"
            else:
                replies = app.control.ping(destination=destination, timeout=timeout) or []
                answering = sorted(name for reply in replies for name in reply)
                what = f"worker {hostname!r}" if hostname else "worker"
        except Exception as exc:
            raise CommandError(
                f"no answer: the broker is unreachable ({exc.__class__.__name__})"
            ) from None
        if not answering:
            raise CommandError(f"no {what} answered within {timeout:g} s")
        self.stdout.write(f"ok: {', '.join(answering)}")
