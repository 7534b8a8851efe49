# The two commands: `make run` and `make test`. Everything else supports them.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
# uv links the venv's files to its cache (its default; it copies where the cache is on another
# file system): a new clone's venv in 6 s instead of 21 s with copies, before every CI run.
export UV_LINK_MODE ?= hardlink
# Python keeps the bytecode it compiles in __pycache__, whatever the shell says: a test run starts
# dozens of Python processes (xdist, gunicorn, Celery workers, scripts), and with
# PYTHONDONTWRITEBYTECODE set each compiled Django and every library from source again (23 s of
# CPU for a test process to start and collect instead of 8; docs/performance.md).
export PYTHONDONTWRITEBYTECODE :=

# make test talks to the machine's real services; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/agent_console
TEST_REDIS_URL ?= redis://127.0.0.1:6379/1
PYTEST_ARGS ?=
# mypy's cache lives outside the tree, so that a new clone (CI's) checks again only what
# differs from the last check on this machine: 8 s instead of 56 s for a clone of 422 modules.
# mypy compares each file's hash, so a changed file is always checked again.
MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/agent-console/mypy
# make bench BENCH_ARGS="--runs 100000 --seconds 5" for a quick check (default: 1,000,000 runs).
BENCH_ARGS ?=

.PHONY: run test test-fast install os-packages test-postgres test-sqlite-smoke lint services bench

install:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	@$(UV) sync --frozen --quiet

run: install
	@mkdir -p var
	@DEBUG=$${DEBUG:-1} $(UV) run python manage.py migrate --no-input -v 0
	@DEBUG=$${DEBUG:-1} $(UV) run python scripts/run_all.py

test: install os-packages services lint
	@$(MAKE) --no-print-directory test-postgres
	@$(MAKE) --no-print-directory test-sqlite-smoke

# Chromium, pgvector and the other OS packages the suite needs, installed only when missing;
# then the npm packages of the Node tests (tests/**/node), when missing or older than the lockfile.
os-packages:
	@bash scripts/install_os_packages.sh
	@bash scripts/install_node_packages.sh

services:
	@bash scripts/ensure_services.sh

lint:
	@$(UV) run ruff check .
	@$(UV) run ruff format --check --quiet .
	@$(UV) run lint-imports --no-cache --no-logo
	@DATABASE_URL=sqlite:///:memory: REDIS_URL= $(UV) run mypy --cache-dir $(MYPY_CACHE_DIR)
	@DATABASE_URL=sqlite:///:memory: REDIS_URL= $(UV) run python manage.py makemigrations --check --dry-run -v 0

# Three test processes on two cores, as in test-fast below: the browser tests, the benchmark
# scripts and the worker tests spend much of their time waiting (on Chromium, a script's own
# processes, a Celery worker), and the third process runs meanwhile. The whole suite took
# 21 min 10 s with two and 18 min 34 s with three on one machine. Four were tried on a slower
# one (18 min 35 s against about 20 minutes): each of two runs failed a test that starts
# processes of its own, so three stay (docs/performance.md, "The test suite's time").
test-postgres:
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) NETGUARD_ALLOW_LOOPBACK_FOR_TESTS=0 \
		$(UV) run pytest -n 3 --dist loadgroup $(PYTEST_ARGS)

# The loop to run while working (README): every test that needs no browser, Celery worker,
# Node or benchmark run (pyproject's markers), on PostgreSQL and Redis; `make test` runs them all.
# The test databases are kept between runs (--reuse-db; new migrations are applied).
# Three test processes on two cores: nearly half of a process's time in these tests is spent
# waiting (on PostgreSQL, a server or subprocess it started, a test's own sleeps), and the third
# process runs meanwhile (docs/performance.md, "The fast loop's time"). Its first run makes a
# third test database. Property tests draw a third of their examples here (Hypothesis's "fast"
# profile, tests/examples.py); `make test` gives them their full budget. The browser tests'
# folder is not even collected. The OS packages are checked (OCR and legacy Office tests).
FAST_MARKERS := not browser and not worker and not node and not benchmark
test-fast: install services
	@bash scripts/install_os_packages.sh
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) NETGUARD_ALLOW_LOOPBACK_FOR_TESTS=0 \
		$(UV) run pytest -n 3 --dist loadgroup --reuse-db -m "$(FAST_MARKERS)" \
		--hypothesis-profile=fast --ignore=tests/browser $(PYTEST_ARGS)

test-sqlite-smoke:
	DATABASE_URL=sqlite:///$(CURDIR)/var/smoke.sqlite3 REDIS_URL= VAR_DIR=$(CURDIR)/var/smoke \
		$(UV) run pytest -m smoke $(PYTEST_ARGS)

# wrk loads the servers (the OS packages bring it); without it a Python loop stands in, far
# weaker (docs/performance.md).
bench: install
	@bash scripts/install_os_packages.sh
	$(UV) run python benchmarks/api_lists.py $(BENCH_ARGS)
