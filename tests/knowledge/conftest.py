"""Fixtures of the knowledge tests: a private media folder, the corpus, documents made
through the real services, and a tiny threaded HTTP server for URL documents."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.corpus import CORPUS_DIR, SKIP_REASON
from tests.http_thread import serve_in_thread
from tests.knowledge.factories import file_document_factory, upload  # noqa: F401

CORPUS = CORPUS_DIR


def corpus_file(relative: str) -> Path:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"{SKIP_REASON}: {relative} not found under {CORPUS} (set CORPUS_DIR)")
    return path


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


# The names most tests use; the factories live in tests/knowledge/factories.py.
make_file_document = file_document_factory


class PageServer:
    """A local HTTP server whose pages a test sets: path -> (status, headers, body)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.requests: list[str] = []
        self.hold = threading.Event()
        self.hold.set()
        self.arrived = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                server.arrived.set()
                server.hold.wait(timeout=60)
                status, headers, body = server.pages.get(
                    self.path, (404, {"Content-Type": "text/plain"}, b"missing")
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = serve_in_thread(self.httpd)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def set_page(self, path: str, body: bytes | str, content_type: str = "text/html") -> None:
        if isinstance(body, str):
            body = body.encode()
        self.pages[path] = (200, {"Content-Type": f"{content_type}; charset=utf-8"}, body)

    def set_redirect(self, path: str, location: str) -> None:
        self.pages[path] = (302, {"Location": location}, b"")

    def close(self) -> None:
        self.hold.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def page_server():
    server = PageServer()
    yield server
    server.close()


@pytest.fixture
def loopback(settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True


def html_page(title: str, *paragraphs: str) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!doctype html><html><head><title>{title}</title></head>"
        f"<body><article><h1>{title}</h1>{body}</article></body></html>"
    )


def start_knowledge_worker(media_root) -> object:
    """A real `celery worker` on this test process's queue that shares our media folder and
    may fetch pages from 127.0.0.1 (only through the test-only setting)."""
    from tests.workers import WorkerProcess

    # Both of this process's queues; tasks the worker itself sends (knowledge.embed after an
    # ingestion) stay on them (tests.workers.worker_environment).
    return WorkerProcess(
        MEDIA_ROOT=str(media_root),
        NETGUARD_ALLOW_LOOPBACK_FOR_TESTS="1",
    ).start()


@pytest.fixture
def knowledge_worker(transactional_db, settings, media_root):
    from config.celery import app

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    app.control.purge()
    worker = start_knowledge_worker(media_root)
    yield worker
    worker.stop()
