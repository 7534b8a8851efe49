"""Loading the settings changes nothing on disk; the embedded broker's folders appear only when
Celery is configured to publish."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import os, pathlib, django
django.setup()
var = pathlib.Path(os.environ["VAR_DIR"])
print("after-setup", var.exists())
from config.celery import app
app.conf.broker_url  # configuring Celery makes the filesystem broker's folders
print("after-configure", sorted(p.name for p in (var / "broker").iterdir()))
"""


def test_settings_create_no_folders_and_celery_makes_the_broker_folders(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": "",
    }
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "after-setup False" in result.stdout
    assert "after-configure ['control', 'processed', 'queue']" in result.stdout
