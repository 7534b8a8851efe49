"""Start web, the three Celery workers and Celery beat together; Ctrl-C stops them all.

Used by `make run`. Seeds the demo workspace first; prints the console's address once the web
process answers, and the sign-in and the demo API key last, after the workers' start-up output
(issue 38, defect 11). As in production (README), one worker serves the interactive queue
(extraction, refreshes), one the webhook queue (deliveries) and one the bulk queue (embedding),
at a lower CPU priority, so a small upload never waits behind a large one's embedding or behind
deliveries to a dead endpoint.
"""

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
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


# Seconds to wait for the web process to answer and the workers to say "ready".
START_TIMEOUT = 240
# Kombu logs this for every connection to the filesystem broker of the embedded default,
# which has no host: true and harmless, so it is said once instead of on every connection.
NO_HOSTNAME = "No hostname was supplied"
NO_HOSTNAME_NOTE = (
    "  (Celery: the embedded default's broker is a folder, not a server, so Kombu's "
    '"No hostname was supplied" warnings are expected and hidden.)'
)


class Output:
    """A child's output, passed through line by line: notes when a worker says it is ready and
    hides Kombu's host warning (see NO_HOSTNAME)."""

    def __init__(self) -> None:
        self.ready: set[str] = set()
        self.lock = threading.Lock()
        self.noted = False

    def piped(self, name: str) -> dict:
        return {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}

    def follow(self, name: str, process: subprocess.Popen) -> None:
        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                if NO_HOSTNAME in line:
                    with self.lock:
                        if self.noted:
                            continue
                        self.noted = True
                    line = NO_HOSTNAME_NOTE + "\n"
                elif " ready." in line and "@" in line:  # "interactive@host ready."
                    self.ready.add(name)
                sys.stdout.write(line)
                sys.stdout.flush()

        threading.Thread(target=pump, daemon=True).start()


def answers(url: str) -> bool:
    """Whether the web process answers at `url` (any HTTP status counts)."""
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our own local address
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def wait_until_up(processes: dict, output: Output, *, url: str) -> bool:
    """Until the web process answers and both workers are ready (or START_TIMEOUT passes, or a
    process exits): False when a process exited."""
    workers = {name for name in processes if name.startswith("worker")}
    deadline = time.monotonic() + START_TIMEOUT
    web_up = False
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in processes.values()):
            return False
        web_up = web_up or answers(url)
        if web_up and workers <= output.ready:
            return True
        time.sleep(0.5)
    return True


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
    print("Seeding the demo workspace…", flush=True)
    seeded = subprocess.run(
        [PYTHON, "manage.py", "seed_demo"], check=True, capture_output=True, text=True
    )
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    output = Output()
    processes = {
        name: subprocess.Popen(
            cmd,
            env=environment(name),
            # The bulk worker yields the CPU to the web and the interactive worker.
            preexec_fn=(lambda: os.nice(BULK_NICENESS)) if name == "worker-bulk" else None,
            **output.piped(name),
        )
        for name, cmd in commands(port=PORT).items()
    }
    for name, process in processes.items():
        output.follow(name, process)

    stopping = []  # set once stop() has been asked: after that, exits are our own doing

    def stop(*_args) -> None:
        stopping.append(True)
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        console = f"http://127.0.0.1:{PORT}/"
        if wait_until_up(processes, output, url=f"{console}login/"):
            # Last, so the address and the once-shown key are not buried in start-up output.
            print(
                f"\n{seeded.stdout.rstrip()}\n\n  Console:  {console}   "
                f"API: {console}v1/docs   (Ctrl-C stops everything)\n",
                flush=True,
            )
        while all(p.poll() is None for p in processes.values()):
            time.sleep(0.5)
        if not stopping:
            # A process died on its own: say which, or the others' shutdown is all one sees.
            for name, process in processes.items():
                if process.poll() is not None:
                    print(
                        f"{name} exited (code {process.returncode}); stopping the rest.", flush=True
                    )
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
