"""Start web, the three Celery workers and Celery beat together; Ctrl-C stops them all.

Used by `make run`. Seeds the demo workspace first and prints how to sign in. As in production
(README), one worker serves the interactive queue (extraction, refreshes), one the webhook queue
(deliveries) and one the bulk queue (embedding), at a lower CPU priority, so a small upload never
waits behind a large one's embedding or behind deliveries to a dead endpoint.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config.settings import VAR_DIR
from config.worker_environment import worker_environment

PORT = os.environ.get("PORT", "8000")
PYTHON = sys.executable
# `nice` value of the bulk worker (the README's production command uses the same).
BULK_NICENESS = 10

# The queue names config/settings.py reads from the same variables.
BULK_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
INTERACTIVE_QUEUE = os.environ.get("CELERY_INTERACTIVE_QUEUE", "interactive")
WEBHOOK_QUEUE = os.environ.get("CELERY_WEBHOOK_QUEUE", "webhooks")


def worker_command(name: str, *, queue: str) -> list[str]:
    return [
        PYTHON,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--loglevel=INFO",
        "--concurrency=2",
        "-Q",
        queue,
        f"--hostname={name}@%h",
    ]


def commands(*, port: str) -> dict[str, list[str]]:
    """Web, the three workers and beat. Beat keeps its schedule in VAR_DIR, with the SQLite
    database, the broker and the media of the embedded default."""
    return {
        "web": [PYTHON, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        "worker-interactive": worker_command("interactive", queue=INTERACTIVE_QUEUE),
        "worker-bulk": worker_command("bulk", queue=BULK_QUEUE),
        "worker-webhooks": worker_command("webhooks", queue=WEBHOOK_QUEUE),
        "beat": [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "config",
            "beat",
            "--loglevel=INFO",
            "--schedule",
            str(VAR_DIR / "celerybeat-schedule"),
        ],
    }


def environment(name: str) -> dict[str, str]:
    """The workers get production's worker environment. The development server serves each
    client connection on a thread of its own and never reuses one, so a connection kept for
    the thread's next request (CONN_MAX_AGE) would only pile up idle on PostgreSQL: it closes
    its connection after each request (DATABASE_CONN_MAX_AGE=0, unless set)."""
    if name.startswith("worker"):
        return worker_environment(os.environ)
    if name == "web":
        return {**os.environ, "DATABASE_CONN_MAX_AGE": os.environ.get("DATABASE_CONN_MAX_AGE", "0")}
    return dict(os.environ)


def main() -> int:
    subprocess.run([PYTHON, "manage.py", "metrics_reset", "-v", "0"], check=True)
    subprocess.run([PYTHON, "manage.py", "seed_demo"], check=True)
    print(
        f"\n  Console:  http://127.0.0.1:{PORT}/   API: http://127.0.0.1:{PORT}/v1/docs\n",
        flush=True,
    )
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    processes = {
        name: subprocess.Popen(
            cmd,
            env=environment(name),
            # The bulk worker yields the CPU to the web and the interactive worker.
            preexec_fn=(lambda: os.nice(BULK_NICENESS)) if name == "worker-bulk" else None,
        )
        for name, cmd in commands(port=PORT).items()
    }

    def stop(*_args) -> None:
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while all(p.poll() is None for p in processes.values()):
            time.sleep(0.5)
    finally:
        stop()
        deadline = time.time() + 10
        for process in processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                process.kill()
    failed = [
        name for name, p in processes.items() if p.returncode not in (0, -signal.SIGTERM, None)
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
