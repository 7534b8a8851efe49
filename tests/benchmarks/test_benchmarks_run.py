"""Every script of benchmarks/ runs to its end at a tiny size, so that none can rot unseen:
`make bench` once failed on a renamed import while docs/performance.md still quoted its figures.

Each script runs as docs/performance.md runs it, a process of its own, with the arguments
below. Every database it is told of is one of its own on the run's PostgreSQL server, named
after the run's test database and dropped afterwards; Redis is the run's (scripts that stop
Redis start their own); corpus, media and broker folders are temporary. Never a development
database. The tests of a group (below) run one after the other on one xdist worker: they share
that worker's benchmark database, migrated before the first (a copy of the test database), and
the scripts that drop and make it again (TEMPLATE_SCRIPTS) make it from a pristine copy instead
of migrating from the start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from tests.corpus import CORPUS_DIR as CORPUS
from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent
BENCHMARKS = ROOT / "benchmarks"
# A few small corpus files, one of each kind the scripts treat apart (benchmarks/extraction.py
# reads the manifest; pdf_vs_markitdown.py the PDFs).
SMALL_CORPUS = ("pdf/multilang.pdf", "txt/book-war-and-peace-1p.txt", "json/markitdown-test.json")

# Each script with the arguments of its smallest run that still takes every path.
SCRIPTS: dict[str, list[str]] = {
    # More than a page of 100 Agents and of revisions: the deep cursor is walked.
    "agent_revisions.py": ["--revisions", "150", "--agents", "120", "--requests", "1",
                           "--repeats", "1"],
    # Ours under gunicorn, loaded by each of the two load generators: wrk (`make test`
    # installs it; one connection, so one wrk thread) and the Python loop that stands in for it
    # where wrk is absent. The stock build's settings, URLs and cursor are run by
    # api_request_cost.py and profile_request.py.
    "api_lists.py": ["--runs", "300", "--rounds", "1", "--seconds", "1", "--warmup", "0",
                     "--connections", "1", "--no-baseline", "--load", "wrk"],
    "api_lists.py --load python": ["--runs", "300", "--rounds", "1", "--seconds", "1",
                                   "--warmup", "0", "--connections", "1", "--no-baseline",
                                   "--load", "python"],
    # Reads the runs api_lists.py filled: it comes after it.
    "api_request_cost.py": ["--requests", "1", "--repeats", "1"],
    # Fills users, documents, deliveries and audit entries beside the runs above; every sorted
    # list's first and middle page.
    "console_lists.py": ["--runs", "300", "--users", "40", "--documents", "40",
                         "--deliveries", "40", "--audit-events", "40", "--requests", "1"],
    "credential_verification.py": ["--rounds", "10"],
    "rate_limit.py": ["--rounds", "20"],
    "dashboards.py": ["--runs", "300", "--users", "20", "--repeat", "1"],
    "extraction.py": ["--repeat", "1"],  # --corpus added below
    # The service as production starts it, and one drill: the worker and Redis drills wait
    # for recovery, minutes on a loaded machine (tests/knowledge/test_recovery_timing.py
    # covers those paths).
    "fault_drills.py": ["--database-outage", "1", "--settle-seconds", "1", "--drill",
                        "database"],
    "json_extraction.py": ["--megabytes", "0.05", "--repeat", "1"],
    "json_extraction.py --ascii": ["--megabytes", "0.05", "--repeat", "1", "--ascii"],
    # The small corpus split in two Agents, one sentence asked per document, with the
    # cross-language set's questions about the documents the small corpus holds.
    "knowledge_calibration.py": ["--per-document", "1", "--cross-language"],
    # Its two Agents' candidates and features, as JSON lines on stdout (the analysis reads
    # such dumps of the relevance and calibration databases).
    "knowledge_abstention_features.py dump": ["dump", "calib", "-"],
    # A few synthetic chunks beside the corpus' (each one real embedding: the model's slowest
    # work here), then the served search through gunicorn, half a second per mode and as long
    # again to warm it.
    "knowledge_search.py": ["--chunks", "20", "--runs", "1", "--http", "0.5"],
    # A fresh process's first keyword search over the Agent knowledge_search.py left, both ways.
    "knowledge_first_search.py cold": ["cold"],
    "knowledge_first_search.py warm": ["warm"],
    # The grouping of unanswered questions on its development set (no database).
    "knowledge_gap_grouping.py": ["--set", "development"],
    # The sweep over a few hundred retrieval steps, then each request once.
    "knowledge_gaps.py": ["--steps", "200", "--distinct", "20", "--requests", "1"],
    # Every run filter and pair over a few thousand runs, each once after one warm-up.
    "run_filters.py": ["--runs", "2000", "--requests", "1", "--warmup", "1"],
    # Word search over a few thousand messages and steps, each query once.
    "message_search.py": ["--messages", "3000", "--steps", "500", "--requests", "1"],
    # The same database as run_filters.py, with two steps per run: every case once.
    "activity_scale.py": ["--runs", "2000", "--steps-per-run", "2", "--requests", "1",
                          "--warmup", "1"],
    # Two small batches of scores through gunicorn, sent twice; the score filter on a few runs.
    "scores.py": ["--batches", "2", "--batch", "50", "--runs", "20", "--filter-runs", "300"],
    "pdf_vs_markitdown.py": ["--repeats", "1"],
    # Every case (runs, steps, OTLP protobuf; one Agent and spread) for half a second, 2
    # clients, small batches, through gunicorn as production runs it.
    "recording.py": ["--tiny", "--cpu"],
    "otlp_hostile.py": ["--tiny"],  # one request of parentless spans; probes beside them
    "profile_request.py": ["--requests", "2", "--runs", "300", "--page", "deep", "--build",
                           "stock", "--top", "3"],
    "run_page.py": ["--requests", "1", "--steps", "10"],
    "tools_discovery.py": ["--tools", "3", "--runs", "1"],
    "usage.py": ["--runs", "300", "--agents", "2", "--days", "3", "--requests", "1"],
    # Fill, measure, purge: one after the other on the same database.
    "scale.py fill": ["fill", "--runs", "200"],
    "scale.py measure": ["measure", "--requests", "1"],
    "scale.py purge": ["purge", "--minutes", "0.2", "--baseline-seconds", "1"],
    # A file of a few passages: every phase, the fresh child's included (waited for).
    "worker_memory.py": ["--megabytes", "0.005", "--embed-seconds", "30", "--settle-seconds",
                         "1"],
    # Two corpus documents embedded beside one burner.
    "embedding_under_load.py": ["--documents", "2", "--burners", "1", "--timeout", "300"],
    # The webhook drill: a few deliveries to the black hole, one small file, one tiny upload
    # (and no pause after it: the next upload's wait).
    "webhook_queue.py": ["--runs", "50", "--files", "1", "--kilobytes", "5", "--uploads", "1",
                         "--upload-every", "0", "--seconds", "5"],
    # One idle and one busy round behind one small file, through the production topology. It
    # drops and makes its database again, so it comes last, when the others are done with it.
    "interactive_queue.py": ["--rounds", "1", "--files", "1", "--kilobytes", "5"],
}  # fmt: skip

# Scripts whose smoke run lives beside their own tests.
RUN_ELSEWHERE = {
    "knowledge_relevance.py": ROOT / "tests/knowledge/test_relevance_benchmark.py",
    # It reads the Agent the relevance smoke run leaves ready.
    "knowledge_rank_orders.py": ROOT / "tests/knowledge/test_relevance_benchmark.py",
}

# Two xdist groups, each run in order by one test process on that process's benchmark
# database: the scripts that start the service's own workers and Redis (the longest runs; the
# last of them makes the database again), and all the others. In one group they were one unit
# of about half the suite's work on a loaded machine; in two, a process that is done with the
# browser tests takes the second.
SERVICE_SCRIPTS = ("fault_drills.py", "recording.py", "worker_memory.py", "interactive_queue.py")
# Scripts that drop their database and make it again: from the migrated template (`--template`),
# not migrated from the start (half a minute of a loaded machine each).
TEMPLATE_SCRIPTS = ("embedding_under_load.py", "webhook_queue.py", "interactive_queue.py")
# Scripts that serve on a fixed port unless told another.
PORT_SCRIPTS = ("api_lists.py", "recording.py", "scores.py")
DATA_GROUP = pytest.mark.xdist_group("benchmarks")
SERVICE_GROUP = pytest.mark.xdist_group("benchmarks-service")

pytestmark = [
    pytest.mark.skipif(not settings.IS_POSTGRES, reason="the benchmarks run on PostgreSQL"),
    pytest.mark.benchmark,
]


@DATA_GROUP
def test_every_script_of_benchmarks_has_a_run_here() -> None:
    scripts = {
        path.name
        for path in BENCHMARKS.glob("*.py")
        if 'if __name__ == "__main__":' in path.read_text()
    }
    assert scripts == {name.split()[0] for name in SCRIPTS} | RUN_ELSEWHERE.keys()
    assert set(SERVICE_SCRIPTS) <= SCRIPTS.keys()
    assert list(SCRIPTS)[-1] == "interactive_queue.py"  # it makes the database again
    for script, test in RUN_ELSEWHERE.items():
        assert script in test.read_text() and "smoke" in test.read_text()


@dataclass(frozen=True)
class BenchDatabases:
    server: str  # postgres://user@host:port
    url: str  # the scripts' database
    template: str  # a migrated database nothing connects to, for scripts that make theirs again


@pytest.fixture(scope="session")
def bench_template(django_db_setup, django_db_blocker) -> Iterator[tuple[str, str]]:
    """A migrated database nothing connects to, once per test process, dropped at its end:
    a copy of the test database when it exists and nothing holds it open, else migrated here
    (when no test of the run needs the test database: this module alone). (server, name)"""
    with django_db_blocker.unblock():
        connection.close()
    db = connection.settings_dict
    # This process's test database (xdist names one per process); the connection is switched
    # to it once django_db_setup has made it, and is not when no test of the run needs it.
    test_name = db["TEST"].get("NAME") or (
        db["NAME"] if db["NAME"].startswith("test_") else f"test_{db['NAME']}"
    )
    made = db["NAME"] == test_name
    server = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    template = f"{test_name}_bench_template"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
        copied = False
        if made:
            try:
                admin.execute(f'CREATE DATABASE "{template}" TEMPLATE "{test_name}"')
                copied = True
            except (psycopg.errors.ObjectInUse, psycopg.errors.InvalidCatalogName):
                pass
        if not copied:
            admin.execute(f'CREATE DATABASE "{template}"')
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
                cwd=ROOT, env={**os.environ, "DATABASE_URL": f"{server}/{template}"},
                check=True, timeout=600,
            )  # fmt: skip
    try:
        yield server, template
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')


@pytest.fixture(scope="module")
def bench_database(bench_template: tuple[str, str]) -> Iterator[BenchDatabases]:
    """The benchmarks' own database beside the run's test database, a copy of the migrated
    template, dropped after: no script migrates from the start (TEMPLATE_SCRIPTS, which make
    their database again, make it from the template too)."""
    server, template = bench_template
    name = template.removesuffix("_template")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        yield BenchDatabases(server=server, url=f"{server}/{name}", template=template)
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    manifest = (CORPUS / "MANIFEST.tsv").read_text().splitlines()
    rows = [manifest[0]] + [row for row in manifest[1:] if row.split("\t")[0] in SMALL_CORPUS]
    assert len(rows) == len(SMALL_CORPUS) + 1
    (folder / "MANIFEST.tsv").write_text("\n".join(rows) + "\n")
    for relative in SMALL_CORPUS:
        (folder / relative).parent.mkdir(exist_ok=True)
        shutil.copyfile(CORPUS / relative, folder / relative)
    return folder


def run_script(
    script: str,
    arguments: list[str],
    databases: BenchDatabases,
    corpus: Path,
    tmp_path: Path,
    **extra: str,
) -> subprocess.CompletedProcess:
    """The script run as docs/performance.md runs it, told of the benchmarks' databases only.
    MARKITDOWN_PYTHON only when given in `extra`."""
    url = databases.url
    env = {
        **os.environ,
        # Every database a script may be pointed at: the benchmarks' own.
        "DATABASE_URL": url,
        "BENCH_DATABASE_URL": url,
        "BENCH_USAGE_DATABASE_URL": url,
        "BENCH_DASH_DATABASE_URL": url,
        "PROFILE_DATABASE_URL": url,
        "DRILL_DATABASE_URL": url,
        "MEMORY_DATABASE_URL": url,
        "RUN_PAGE_DATABASE_URL": url,
        "CALIBRATION_DATABASE_URL": url,
        "RECORDING_DATABASE_URL": url,
        "BENCH_SCALE_DATABASE_URL": url,
        "BENCH_FILTERS_DATABASE_URL": url,
        "BENCH_SEARCH_DATABASE_URL": url,
        "GAPS_DATABASE_URL": url,
        "SCORES_DATABASE_URL": url,
        "REDIS_URL": settings.REDIS_URL,
        "CORPUS_DIR": str(corpus),
        "VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "TMPDIR": str(tmp_path),
        # The fault drill's recovery at the real-worker tests' pace (tests/knowledge/
        # test_recovery_timing.py), not production's 30 s lease.
        "KNOWLEDGE_CLAIM_LEASE_SECONDS": "4",
        "KNOWLEDGE_RECOVER_INTERVAL_SECONDS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("MARKITDOWN_PYTHON", None)
    env.update(extra)
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script.split()[0]), *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(name, id=name, marks=SERVICE_GROUP if name in SERVICE_SCRIPTS else DATA_GROUP)
        for name in SCRIPTS
    ],
)
def test_script_runs_at_a_tiny_size(
    script: str, bench_database: BenchDatabases, small_corpus: Path, tmp_path: Path
) -> None:
    arguments = list(SCRIPTS[script])
    if "wrk" in arguments and shutil.which("wrk") is None:
        pytest.fail(
            "wrk is not installed; `make test` installs it (scripts/install_os_packages.sh)"
        )
    if script == "extraction.py":
        arguments += ["--corpus", str(small_corpus)]
    if script in TEMPLATE_SCRIPTS:
        arguments += ["--template", bench_database.template]
    if script.split()[0] in PORT_SCRIPTS:
        # A free port, not the script's fixed default, which another run on the machine may
        # hold (api_lists.py serves the stock build on the next one, unused here).
        arguments += ["--port", str(free_port())]
    result = run_script(script, arguments, bench_database, small_corpus, tmp_path)
    assert result.returncode == 0, (
        f"{script} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )
    assert result.stdout.strip(), f"{script} printed nothing"


@DATA_GROUP
def test_pdf_vs_markitdown_beside_markitdown(
    bench_database: BenchDatabases, small_corpus: Path, tmp_path: Path
) -> None:
    """The comparison itself, when the developer has MarkItDown's interpreter at hand (the run
    above takes the path without it)."""
    python = os.environ.get("MARKITDOWN_PYTHON")
    if not python:
        pytest.skip("MARKITDOWN_PYTHON is not set (benchmarks/pdf_vs_markitdown.py says how)")
    result = run_script(
        "pdf_vs_markitdown.py", ["--repeats", "1"], bench_database, small_corpus, tmp_path,
        MARKITDOWN_PYTHON=python,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MarkItDown's time" in result.stdout, result.stdout


@DATA_GROUP
def test_pdf_vs_markitdown_says_why_markitdown_failed(
    bench_database: BenchDatabases, small_corpus: Path, tmp_path: Path
) -> None:
    """MARKITDOWN_PYTHON naming an interpreter without MarkItDown (ours): the run ends with
    that interpreter's own error, not a bare CalledProcessError."""
    result = run_script(
        "pdf_vs_markitdown.py", ["--repeats", "1"], bench_database, small_corpus, tmp_path,
        MARKITDOWN_PYTHON=sys.executable,
    )  # fmt: skip
    assert result.returncode != 0
    assert "exited with status 1" in result.stderr, result.stderr[-3000:]
    assert "No module named 'markitdown'" in result.stderr, result.stderr[-3000:]


@DATA_GROUP
def test_a_failing_wrk_ends_the_benchmark_with_its_message(tmp_path: Path, monkeypatch) -> None:
    """wrk's refusals (a bad option, an unreachable URL) end api_lists.py with wrk's own words,
    not a bare status, whichever the load generator's version."""
    from benchmarks.api_lists import load_with_wrk

    stub = tmp_path / "bin" / "wrk"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho 'number of connections must be >= threads' >&2\nexit 1\n")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(SystemExit, match="wrk exited with status 1: number of connections must"):
        load_with_wrk("http://127.0.0.1:9/v1/runs", "key", 1, 1)


@DATA_GROUP
def test_wrk_is_given_no_more_threads_than_connections(httpserver) -> None:
    """The real wrk (`make test` installs it) against a local server with one connection: the
    tiny size's case, which wrk refused with two threads."""
    from benchmarks.api_lists import load_with_wrk

    if shutil.which("wrk") is None:
        pytest.fail(
            "wrk is not installed; `make test` installs it (scripts/install_os_packages.sh)"
        )
    httpserver.expect_request("/v1/runs").respond_with_data("{}", content_type="application/json")
    rate, p99 = load_with_wrk(httpserver.url_for("/v1/runs"), "key", 1, 1)
    assert rate > 0 and p99 > 0
