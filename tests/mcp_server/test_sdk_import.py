"""The MCP SDK (about 0.8 s of CPU to import, its pydantic models) is imported by what uses it:
the `/mcp` endpoint and tool discovery, not by every process that loads the tasks or the URLs
(each Celery worker at start, every test process and script)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE = """
import sys
import django
django.setup()
from django.urls import resolve
from config.celery import app
app.loader.import_default_modules()  # what a worker imports at start: every app's tasks
resolve("/v1/runs")  # loads every URL pattern
print("after start-up:", "mcp" in sys.modules)
from apps.tools import mcp_client
mcp_client.list_remote_tools
print("after discovery's import:", "mcp" in sys.modules)
"""


def test_tasks_and_urls_load_without_the_sdk_and_discovery_loads_it():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "after start-up: False" in result.stdout
    assert "after discovery's import: True" in result.stdout
