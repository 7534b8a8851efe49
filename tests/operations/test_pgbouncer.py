"""The service behind PgBouncer in transaction mode (docs/operations.md, "Scale-out").

A private PgBouncer with a pool of two server connections sits between PostgreSQL and a
gunicorn (4 threads, persistent connections) and a Celery worker, both with
DATABASE_POOLER=transaction. Recording, lists, an upload extracted by the worker, keyword and
hybrid search, and the console (a real login through the form, pages) all work; PgBouncer
served more client connections than it opened server connections, which only transaction
pooling allows.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

from tests.factories import api_key_factory
from tests.pgbouncer import PgBouncer
from tests.web_server import GunicornServer
from tests.workers import WorkerProcess, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RECORDS = [
    {"type": "conversation", "id": "conv_pool", "title": "Kettle", "source": "embed",
     "status": "completed", "created_at": "2026-01-05T10:00:00Z"},
    {"type": "message", "id": "msg_pool", "conversation_id": "conv_pool", "role": "user",
     "parts": [{"type": "text", "text": "Is my kettle covered?"}],
     "created_at": "2026-01-05T10:00:01Z"},
    {"type": "run", "id": "run_pool", "conversation_id": "conv_pool", "request_id": "req_pool",
     "sdk_version": "5.0.12", "protocol_version": 1, "status": "completed",
     "total_turn_latency_ms": 1800.0, "created_at": "2026-01-05T10:00:01Z"},
]  # fmt: skip


@pytest.fixture
def pgbouncer(settings):
    if not settings.IS_POSTGRES:
        pytest.skip("PgBouncer pools PostgreSQL connections")
    if not PgBouncer.available():
        pytest.skip("pgbouncer is not installed (scripts/install_os_packages.sh installs it)")
    if not settings.REDIS_URL:
        pytest.skip("the worker needs Redis (REDIS_URL)")
    folder = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    folder.chmod(0o755)  # PgBouncer runs as postgres when the tests run as root
    db = connection.settings_dict
    bouncer = PgBouncer(
        folder,
        upstream_host=db["HOST"] or "127.0.0.1",
        upstream_port=int(db["PORT"] or 5432),
        user=db["USER"],
        pool_size=2,
    ).start()
    yield bouncer
    bouncer.stop()
    shutil.rmtree(folder, ignore_errors=True)


def _login(url: str, user) -> httpx.Client:
    """A console session made by the login form, as a person makes it."""
    browser = httpx.Client(base_url=url, timeout=30, follow_redirects=False)
    form = browser.get("/login/")
    assert form.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    response = browser.post(
        "/login/",
        data={"username": user.email, "password": user.raw_password,
              "csrfmiddlewaretoken": token},
        headers={"Referer": f"{url}/login/"},
    )  # fmt: skip
    assert response.status_code == 302, response.text[:500]
    return browser


def test_the_service_works_behind_pgbouncer_in_transaction_mode(pgbouncer, agent, owner, settings):
    _key, raw = api_key_factory(
        agent=agent,
        scopes=["activity:write", "runs:read", "conversations:read", "knowledge:read",
                "knowledge:write"],
        created_by=owner,
    )  # fmt: skip
    pooled = {
        "DATABASE_URL": pgbouncer.url(connection.settings_dict["NAME"]),
        "DATABASE_POOLER": "transaction",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
    }
    web = GunicornServer(threads=4, **pooled).start()
    worker = WorkerProcess(**pooled).start()
    try:
        api = httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {raw}"}, timeout=30)
        # Recording and the lists.
        assert api.post("/v1/ingest", json=RECORDS).json()["created"] == 3
        runs = api.get("/v1/runs").json()["data"]
        assert [run["id"] for run in runs] == ["run_pool"]
        assert runs[0]["created_at"] == "2026-01-05T10:00:01.000Z"
        messages = api.get("/v1/conversations/conv_pool/messages").json()["data"]
        assert [message["id"] for message in messages] == ["msg_pool"]

        # An upload extracted by the worker, then found by search.
        text = b"# Warranty\n\nEvery kettle carries a two-year warranty against limescale.\n"
        created = api.post("/v1/knowledge/files", files={"file": ("warranty.md", text)})
        assert created.status_code == 201, created.text
        document_id = created.json()["id"]
        wait_for(
            lambda: api.get(f"/v1/knowledge/{document_id}").json()["status"] == "ready",
            timeout=90,
            message="the worker never extracted the upload through PgBouncer",
        )
        for mode in ("keyword", "hybrid"):
            found = api.post(
                "/v1/knowledge/search", json={"query": "kettle warranty", "mode": mode}
            ).json()["data"]
            assert found and found[0]["document_id"] == document_id, (mode, found)

        # The console: a login through the form (its session written through the pool), pages.
        browser = _login(web.url, owner)
        page = browser.get("/runs/")
        assert page.status_code == 200 and "run_pool" in page.text
        assert browser.get("/runs/run_pool/").status_code == 200

        # Four clients at once, each running a statement, on a pool of two server
        # connections: only transaction pooling serves them (in session mode the third would
        # wait for a server until query_wait_timeout).
        clients = [
            psycopg.connect(pgbouncer.url(connection.settings_dict["NAME"]), autocommit=True)
            for _ in range(4)
        ]
        try:
            assert [c.execute("SELECT 1").fetchone() for c in clients] == [(1,)] * 4
            pools = [p for p in pgbouncer.admin("SHOW POOLS") if p["database"] != "pgbouncer"]
            assert sum(p["cl_active"] for p in pools) >= 4, pools
            assert sum(p["sv_active"] + p["sv_idle"] + p["sv_used"] for p in pools) <= 2, pools
        finally:
            for client in clients:
                client.close()
    finally:
        worker.stop()
        web.stop()
