"""Shared fixtures: personas (owner, member, outsider), Agents, keys with chosen scopes, and
an API client that speaks Bearer. App-specific factories live in tests/<app>/factories.py
(workspaces' in tests/factories.py). Usage and retention have none: their rows are made the way
the service makes them, by recording runs (tests/activity/factories.py) and `retention_set`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import orjson
import pytest
from django.test import Client
from hypothesis import settings as hypothesis_settings

from apps.api.scopes import ALL_SCOPES
from apps.workspaces.models import Membership
from tests.examples import FAST_PROFILE_EXAMPLES
from tests.factories import (
    agent_factory,
    api_key_factory,
    membership_factory,
    user_factory,
    workspace_factory,
)
from tests.redis_server import RedisServer

# `make test-fast` runs the property tests with a third of their examples (tests/examples.py).
hypothesis_settings.register_profile("fast", max_examples=FAST_PROFILE_EXAMPLES)


@pytest.fixture
def owner(db):
    return user_factory(email="owner@example.com", first_name="Olive", last_name="Owner")


@pytest.fixture
def member(db, workspace):
    user = user_factory(email="member@example.com", first_name="Mo", last_name="Member")
    membership_factory(workspace=workspace, user=user, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def workspace(db, owner):
    return workspace_factory(name="Acme", owner=owner)


@pytest.fixture
def agent(db, workspace):
    return agent_factory(workspace=workspace, name="Support Agent")


@pytest.fixture
def sibling_agent(db, workspace):
    """Another Agent of the same workspace."""
    return agent_factory(workspace=workspace, name="Sales Agent")


@pytest.fixture
def other_agent(db):
    """An Agent of another workspace, with its own owner."""
    outsider = user_factory(email="outsider@example.com")
    return agent_factory(
        workspace=workspace_factory(name="Other Co", owner=outsider), name="Theirs"
    )


@dataclass
class ApiResponse:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return orjson.loads(self.body)


class ApiClient:
    """A thin Bearer client over Django's test client; returns status, headers and body."""

    def __init__(self, raw_key: str | None) -> None:
        self.raw_key = raw_key
        self.client = Client()

    def _headers(self, extra: dict | None) -> dict:
        headers = {}
        if self.raw_key is not None:
            headers["Authorization"] = f"Bearer {self.raw_key}"
        headers.update(extra or {})
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        json=None,
        data=None,
        content_type=None,
        headers=None,
        params=None,
    ):
        kwargs = {"headers": self._headers(headers)}
        if json is not None:
            kwargs["data"] = orjson.dumps(json)
            kwargs["content_type"] = "application/json"
        elif data is not None:
            kwargs["data"] = data
            if content_type:
                kwargs["content_type"] = content_type
        if params:
            kwargs["QUERY_STRING"] = "&".join(f"{k}={v}" for k, v in params.items())
        response = getattr(self.client, method.lower())(path, **kwargs)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        return ApiResponse(status=response.status_code, headers=dict(response.headers), body=body)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def patch(self, path, **kw):
        return self.request("PATCH", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


@pytest.fixture
def make_api(agent, owner):
    """make_api(scopes=[...], agent=..., created_by=...) -> ApiClient with a fresh key."""

    def make(scopes=None, *, for_agent=None, created_by=owner) -> ApiClient:
        key, raw = api_key_factory(
            agent=for_agent or agent, scopes=scopes or list(ALL_SCOPES), created_by=created_by
        )
        client = ApiClient(raw)
        client.key = key
        return client

    return make


@pytest.fixture
def api(make_api) -> ApiClient:
    """A client with a full-scope key of `agent`, created by the owner."""
    return make_api()


@pytest.fixture
def anonymous_api() -> ApiClient:
    return ApiClient(None)


@pytest.fixture
def celery_worker_process(transactional_db, settings):
    """A real `celery worker` process on the Redis broker; purges the queue first."""
    from config.celery import app
    from tests.workers import WorkerProcess, purge_test_queues

    if not settings.REDIS_URL:
        pytest.skip("a real worker needs Redis (REDIS_URL)")
    app.control.purge()
    purge_test_queues()
    worker = WorkerProcess().start()
    yield worker
    worker.stop()


@pytest.fixture(scope="session", autouse=True)
def _celery_queue_per_test_process(worker_id):
    """Each xdist process gets its own queue, so a worker started by one never runs tasks
    meant for another process's test database."""
    from django.conf import settings

    from config.celery import app

    database = str(settings.DATABASES["default"]["NAME"]).rsplit("/", 1)[-1]
    app.conf.task_default_queue = f"tests-{database}-{worker_id}"
    app.conf.interactive_queue = f"tests-{database}-{worker_id}-interactive"
    app.conf.webhook_queue = f"tests-{database}-{worker_id}-webhooks"
    yield


@pytest.fixture(scope="session", autouse=True)
def _passwords_hashed_for_tests():
    """Passwords hashed with 1,000 PBKDF2 iterations in the test processes (tests/passwords.py);
    the production hashers stay listed, so a hash made elsewhere still checks."""
    from django.conf import settings
    from django.test.utils import override_settings

    hashers = ["tests.passwords.FastPBKDF2PasswordHasher", *settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=hashers):
        yield


@pytest.fixture(scope="session", autouse=True)
def _flush_deletes_only_the_rows_written():
    """After a test that commits, empty only the tables it filled (tests/flush.py)."""
    from tests import flush

    flush.install()


@pytest.fixture(scope="session")
def _media_folders(tmp_path_factory):
    """The test process's folder of media folders, and the number of the next one."""
    return tmp_path_factory.mktemp("media"), itertools.count()


@pytest.fixture(autouse=True)
def _uploads_in_a_temporary_folder(settings, _media_folders):
    """No test writes uploaded files into the project's var/ folder: each has its own empty one.
    Numbered here, not by `tmp_path_factory.mktemp`, which lists the process's whole temporary
    folder to find the next free number: over a thousand tests in a process, quadratic."""
    base, numbers = _media_folders
    settings.MEDIA_ROOT = base / str(next(numbers))
    settings.MEDIA_ROOT.mkdir()
    # The OAuth endpoints count per client address, and every test client is 127.0.0.1 in one
    # shared Redis: the tests of those limits set their own rate and address.
    settings.OAUTH_REGISTRATION_RATE_LIMIT = "100000/minute"
    settings.OAUTH_TOKEN_RATE_LIMIT = "100000/minute"


def pytest_collection_finish(session):
    """What collection made (Django, every test module, the OpenAPI document and the matrices
    built from it) lives until the process ends: frozen out of the garbage collector's view, and
    the youngest generation collected every 10,000 allocations instead of 700, the collector
    takes half the CPU it did over a `make test-fast` run (docs/performance.md, the fast loop)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def pytest_collection_modifyitems(items):
    """A test that asks for `celery_worker_process` starts a worker: it carries the marker."""
    for item in items:
        if "celery_worker_process" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.worker)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Tell tests/workers.py which test is starting, for its check of the `worker` marker."""
    from tests import workers

    workers.running_test = item


def pytest_configure(config):
    """Start each run with an empty metrics folder (every process of the run, test workers and
    their Celery workers, writes its samples there), as production does at start-up. Only the
    first process: xdist's workers start after it."""
    import shutil

    from django.conf import settings

    if hasattr(config, "workerinput"):
        return
    folder = settings.PROMETHEUS_MULTIPROC_DIR
    if folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Say once, after pytest's own summary, how many skips were for want of the shared corpus."""
    from tests.corpus import CORPUS_DIR, SKIP_REASON

    yield
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and SKIP_REASON in str(report.longrepr[2])
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} skipped (a module-level skip counts once) because the shared "
            f"corpus is not at {CORPUS_DIR}; set CORPUS_DIR to run them.",
            yellow=True,
        )


def console_client(user, agent) -> Client:
    """A browser-less console session of `user`, with `agent` as its current Agent."""
    from apps.workspaces.console import SESSION_AGENT_KEY

    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_AGENT_KEY] = agent.pk
    session.save()
    return client


@pytest.fixture
def owner_client(owner, agent):
    return console_client(owner, agent)


@pytest.fixture
def member_client(member, agent):
    return console_client(member, agent)


@pytest.fixture
def private_redis(settings):
    """A private redis-server as the rate limiter's store (which holds the API key cache) and
    the default cache, its clients waiting at most a second: a test may pause or watch it
    (MONITOR) without other test workers, which share the machine's Redis, in the way."""
    server = RedisServer().start()
    settings.RATE_LIMIT_STORAGE_URL = server.url(0)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": server.url(0),
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    yield server
    server.stop()


@pytest.fixture
def redis_store(private_redis):
    """A client of `private_redis`."""
    return private_redis.client()
