"""Start web, Celery worker and Celery beat together; Ctrl-C stops all three.

Used by `make run`. Seeds the demo workspace first and prints how to sign in.
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


def commands(*, port: str) -> dict[str, list[str]]:
    """Web, worker and beat. Beat keeps its schedule in VAR_DIR, with the SQLite database, the
    broker and the media of the embedded default."""
    return {
        "web": [PYTHON, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        "worker": [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--loglevel=INFO",
            "--concurrency=2",
        ],
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


def main() -> int:
    subprocess.run([PYTHON, "manage.py", "seed_demo"], check=True)
    print(
        f"\n  Console:  http://127.0.0.1:{PORT}/   API: http://127.0.0.1:{PORT}/v1/docs\n",
        flush=True,
    )
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    processes = {
        name: subprocess.Popen(
            cmd, env=worker_environment(os.environ) if name == "worker" else None
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
