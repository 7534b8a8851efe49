"""Recording throughput from outside: completed runs, steps and OTLP spans over real HTTP.

    uv run python benchmarks/recording.py [--seconds 10] [--clients 16] [--batch 100]
        [--step-runs 10] [--steps-per-run 99] [--otlp-traces 100] [--spans-per-trace 10]
        [--rounds 3] [--waits] [--cpu] [--only CASE ...] [--tiny] [--dimensions none|otlp|all]

Starts the service as the README runs it in production (gunicorn, 2 workers x 4 threads, on
loopback) against a database of its own (RECORDING_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_recording; migrated, one workspace with 17
Agents and an `activity:write` key each) and Redis (REDIS_URL; the rate limit raised so it
never refuses). Each case runs `--seconds` with its clients (threads holding one keep-alive
connection each, every request built before its clock starts) and counts what the server
answered 200 for:

- runs: completed runs (one per request, or `--batch` per request) posted to /v1/ingest, by
  1 or `--clients` clients, all on one Agent or spread over `--clients` Agents (the issue's
  "no single-row serialisation": one Agent should reach 90 % of the spread figure); and
  `--batch` runs of as many end users, each in a conversation of its own, of three models and
  two statuses (what the Overview's per-user and per-conversation rows cost at their most);
- steps: `type: step` records in batches (`--step-runs` runs of `--steps-per-run` steps each,
  one request), 1 client and 4 clients;
- otlp: `ExportTraceServiceRequest` protobuf batches built with opentelemetry-proto
  (`--otlp-traces` traces of `--spans-per-trace` spans: an invoke_agent root, chat spans with
  token usage, execute_tool spans), 1 client and 4 clients.

Prints one line per case (records/s, requests/s, p50/p95 latency, load average; with `--cpu`
the service's CPU per 1,000 records: gunicorn's and its PostgreSQL backends', from /proc, the
figure to compare two builds by on a machine others load, and of it the backends') and the one-Agent / spread ratios. `--tiny` runs every case for a moment at a small size (the smoke run
of tests/benchmarks/).

The two cases of each ratio (16 clients on one Agent, and spread) run as a pair, `--rounds`
times, alternating which goes first (one Agent then spread, spread then one Agent, ...): each
round's ratio compares two cases measured one right after the other, on tables of about the
same size, and the ratio printed is the median of the rounds' (with their range). Run once
each, in a fixed order, the second case always found the tables, the WAL and the checkpoint
the first left behind, and one pair moved by ±30 % from one run to the next. Every case
starts settled, outside its clock: the tables analyzed, the rollup tables vacuumed as
autovacuum would keep them, and a CHECKPOINT (`settle`). `--waits` samples
the benchmark database's `pg_stat_activity` every 50 ms during each case and prints what its
connections waited on. `--only` keeps the cases whose name has one of the words, as whole
words ("x 100" is not "x 1000").
"""

import argparse
import http.client
import itertools
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import benchmark_environment  # noqa: E402 - after the path is set

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_recording"
AGENTS = 17
_counter = itertools.count()
_counter_lock = threading.Lock()


def unique(prefix: str) -> str:
    with _counter_lock:
        return f"{prefix}_{os.getpid()}_{time.time_ns()}_{next(_counter)}"


def analyze() -> None:
    """ANALYZE the tables recording writes, as autovacuum keeps them in production (it is off on
    the shared test server). Before each round of a pair too: a fresh database analyzed empty
    kept plans that read one Agent's growing rows, and the one-Agent case fell round after round
    (docs/performance.md, "One Agent against 16 Agents")."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE activity_run, activity_runstep, activity_message, "
                       "activity_conversation, activity_enduser, usage_dailyusage, "
                       "usage_dailylatency")  # fmt: skip


_checkpoint_refused = False
# The rollups recording upserts: small tables whose few rows every batch updates, which
# autovacuum (off on the shared test server) keeps vacuumed in production. Without it, their
# dead row versions pile up over the cases and each case pays for the ones before.
ROLLUP_TABLES = ("activity_rollup", "activity_rolluplatency", "usage_dailyusage",
                 "usage_dailylatency")  # fmt: skip


def vacuum_rollups() -> None:
    """VACUUM (ANALYZE) the rollup tables this tree has (a tree from before one has fewer)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname = ANY(%s)",
            [list(ROLLUP_TABLES)],
        )
        tables = [name for (name,) in cursor.fetchall()]
        if tables:
            cursor.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")


def settle(*, checkpoint: bool = True) -> None:
    """Before each case, outside its clock: the tables analyzed as the cases before left them
    (`analyze`), and a CHECKPOINT, so that a case does not pay for writing out the pages the
    case before it dirtied (one client's OTLP case measured right after the 16-client batches
    ran at 3,600 spans/s, alone at 5,300-5,800: docs/performance.md, "Recording"). The smoke
    run (`--tiny`) measures nothing and skips it: a CHECKPOINT writes out the whole server's
    dirty pages, every other test's database's too."""
    from django.db import ProgrammingError, connection

    analyze()
    vacuum_rollups()
    global _checkpoint_refused
    if _checkpoint_refused or not checkpoint:
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    except ProgrammingError:  # a role without pg_checkpoint: the cases run unsettled, said once
        _checkpoint_refused = True
        print("  (CHECKPOINT refused for this role: cases are not settled)", flush=True)


def prepare(clients: int) -> list[dict]:
    """Migrate; one workspace, AGENTS Agents, a key each. Returns [{agent, key}]."""
    import django

    django.setup()
    from django.core.management import call_command

    from apps.workspaces.models import Agent, Workspace
    from apps.workspaces.services import api_key_create

    call_command("migrate", verbosity=0)
    # Statistics as autovacuum keeps them in production: the database grows by every run of
    # this benchmark, and a table never analyzed (autovacuum off, as on the shared test server)
    # makes the planner read a whole Agent to find a batch's 100 ids.

    analyze()
    workspace, _ = Workspace.objects.get_or_create(id="ws_recording", defaults={"name": "Rec"})
    out = []
    for number in range(AGENTS):
        agent, _ = Agent.objects.get_or_create(
            id=f"agt_recording_{number:02d}",
            defaults={"workspace": workspace, "name": f"Recording {number}"},
        )
        _key, raw = api_key_create(
            agent=agent, name="recording bench", scopes=["activity:write"], created_by=None
        )
        out.append({"agent": agent.pk, "key": raw})
    return out


# --- request bodies ------------------------------------------------------------------------------


# `--dimensions`: what each run carries of issue 36's dimensions (docs/activity-recording.md,
# "Dimensions"). "otlp" puts them in the OTLP traces only (a tree without them ignores them, so
# before and after take the same bodies); "all" in the /v1/ingest run records too.
DIMENSIONS = "none"
RUN_DIMENSIONS = {"environment": "production", "release": "1.4.2", "tags": ["vip", "beta"],
                  "metadata": {"tier": "gold", "seats": 12}}  # fmt: skip


def run_records(conversation: str, count: int) -> list[dict]:
    extra = RUN_DIMENSIONS if DIMENSIONS == "all" else {}
    now = time.time()
    created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - 3)) + "Z"
    completed = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + "Z"
    return [
        {"type": "run", "id": unique("run"), "conversation_id": conversation,
         "request_id": unique("req"), "status": "completed", "model_id": "gpt-4.1-mini",
         "sdk_version": "5.0.12", "input_tokens": 1830, "output_tokens": 212,
         "total_tokens": 2042, "credits_charged": 0.42, "tool_names": ["lookup_order"],
         "created_at": created, "completed_at": completed, "total_turn_latency_ms": 2870,
         **extra}
        for _ in range(count)
    ]  # fmt: skip


def user_of(conversation: str) -> str:
    """The end user of a conversation `conversation_for` made with `spread`."""
    return f"{conversation}_user"


def spread_run_records(conversations: str) -> list[dict]:
    """A run in each of the conversations (`conversation_for`'s, with `spread`), by its end
    user, of one of three models, one in five failed."""
    out = []
    for index, (run, conversation) in enumerate(
        zip(run_records("", conversations.count(",") + 1), conversations.split(","), strict=True)
    ):
        run |= {"conversation_id": conversation, "user_id": user_of(conversation),
                "model_id": ("gpt-4.1-mini", "gpt-4.1", "claude-sonnet-4")[index % 3],
                "status": "failed" if index % 5 == 0 else "completed"}  # fmt: skip
        out.append(run)
    return out


def step_records(conversation: str, runs: int, steps: int) -> list[dict]:
    records: list[dict] = []
    for run in run_records(conversation, runs):
        totals = ("input_tokens", "output_tokens", "total_tokens", "credits_charged")
        records.append({key: value for key, value in run.items() if key not in totals})
        root = unique("step")
        records.append({"type": "step", "id": root, "run_id": run["id"], "kind": "agent",
                        "name": "invoke_agent", "started_at": run["created_at"],
                        "ended_at": run["completed_at"]})  # fmt: skip
        for index in range(steps - 1):
            step = {"type": "step", "id": unique("step"), "run_id": run["id"], "parent_id": root,
                    "started_at": run["created_at"], "ended_at": run["completed_at"]}  # fmt: skip
            if index % 2:
                step |= {"kind": "tool", "name": "execute_tool lookup_order",
                         "tool_name": "lookup_order", "input": {"order": index},
                         "output": {"status": "shipped"}}  # fmt: skip
            else:
                step |= {"kind": "model", "name": "chat gpt-4.1-mini",
                         "model_id": "gpt-4.1-mini", "input_tokens": 100, "output_tokens": 20,
                         "total_tokens": 120, "finish_reason": "stop"}  # fmt: skip
            records.append(step)
    return records


def otlp_body(conversation: str, traces: int, spans: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def attributes(**values) -> list:
        out = []
        for key, value in values.items():
            key = key.replace("__", ".")
            if isinstance(value, str):
                out.append(KeyValue(key=key, value=AnyValue(string_value=value)))
            else:
                out.append(KeyValue(key=key, value=AnyValue(int_value=value)))
        return out

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(
        attributes(
            service__name="bench",
            telemetry__sdk__name="opentelemetry",
            telemetry__sdk__version="1.45.1",
        )  # fmt: skip
    )
    dimensions = DIMENSIONS in ("otlp", "all")
    if dimensions:
        resource_spans.resource.attributes.extend(
            attributes(deployment__environment__name="production", service__version="1.4.2")
        )
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "benchmarks.recording"
    start = time.time_ns() - 3_000_000_000
    end = start + 2_000_000_000
    for _ in range(traces):
        trace_id = os.urandom(16)
        root_id = os.urandom(8)
        scope.spans.append(
            Span(
                trace_id=trace_id,
                span_id=root_id,
                name="invoke_agent support",
                start_time_unix_nano=start,
                end_time_unix_nano=end,
                attributes=attributes(
                    gen_ai__operation__name="invoke_agent",
                    gen_ai__conversation__id=conversation,
                    gen_ai__input__messages='[{"role":"user","content":"Where is my refund?"}]',
                    gen_ai__output__messages='[{"role":"assistant","content":"On its way."}]',
                )
                + (
                    [
                        KeyValue(key=f"ai.telemetry.metadata.{key}", value=AnyValue(string_value=v))
                        for key, v in (("tier", "gold"), ("plan", "team"))
                    ]
                    if dimensions
                    else []
                ),
            )  # fmt: skip
        )
        for index in range(spans - 1):
            if index % 2:
                extra = attributes(gen_ai__operation__name="execute_tool",
                                   gen_ai__tool__name="lookup_order",
                                   gen_ai__tool__call__arguments='{"order": 1042}',
                                   gen_ai__tool__call__result='{"status": "shipped"}')  # fmt: skip
                name = "execute_tool lookup_order"
            else:
                extra = attributes(gen_ai__operation__name="chat",
                                   gen_ai__request__model="gpt-4.1-mini",
                                   gen_ai__usage__input_tokens=100,
                                   gen_ai__usage__output_tokens=20)  # fmt: skip
                name = "chat gpt-4.1-mini"
            scope.spans.append(
                Span(
                    trace_id=trace_id,
                    span_id=os.urandom(8),
                    parent_span_id=root_id,
                    name=name,
                    start_time_unix_nano=start + 1000,
                    end_time_unix_nano=end - 1000,
                    attributes=extra,
                )  # fmt: skip
            )
    return request.SerializeToString()


# --- load ----------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    unit: str  # "runs" or "spans"
    clients: int
    agents: int  # the clients are spread over this many Agents
    path: str
    content_type: str
    per_request: int  # units each request records
    build: object  # (conversation) -> bytes; with `spread`, the conversations joined by ","
    spread: int = 0  # a client's end users, each with a conversation of their own


@dataclass
class Outcome:
    requests: int = 0
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def client_loop(port, key, conversation, case: Case, stop_at, outcome: Outcome, lock) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": case.content_type}
    done, latencies, failures = 0, [], []
    while time.monotonic() < stop_at:
        body = case.build(conversation)
        started = time.monotonic()
        try:
            connection.request("POST", case.path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as error:
            failures.append(repr(error))
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            continue
        latencies.append(time.monotonic() - started)
        if response.status != 200 or b"rejectedSpans" in payload or b"rejected_spans" in payload:
            failures.append(f"{response.status} {payload[:300]!r}")
            continue
        done += 1
    connection.close()
    with lock:
        outcome.requests += done
        outcome.latencies += latencies
        outcome.failures += failures


def conversation_for(port: int, key: str, spread: int = 0) -> str:
    """A new conversation (with `spread`, that many end users and a conversation for each,
    their ids joined by ",")."""
    conversation = unique("conv")
    records = [{"type": "conversation", "id": conversation, "status": "completed"}]
    if spread:
        records = []
        ids = [f"{conversation}_{index}" for index in range(spread)]
        for talk in ids:
            records += [{"type": "user", "id": user_of(talk)},
                        {"type": "conversation", "id": talk, "user_id": user_of(talk),
                         "status": "completed"}]  # fmt: skip
        conversation = ",".join(ids)
    body = orjson.dumps(records)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(
        "POST", "/v1/ingest", body=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )  # fmt: skip
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"setup failed: {response.status} {payload[:300]!r}")
    return conversation


class WaitSampler:
    """What the benchmark database's connections are doing, sampled every 50 ms on a
    connection of its own while a case runs: the average number of connections in each state
    and wait event (`active|LWLock:BufferContent`, ...)."""

    def __init__(self, database_url: str) -> None:
        import psycopg

        self.connection = psycopg.connect(database_url, autocommit=True)
        self.database = database_url.rsplit("/", 1)[1]
        self.counts: dict[str, int] = {}
        self.samples = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        query = (
            "SELECT state, coalesce(wait_event_type || ':' || wait_event, 'CPU') "
            "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
        while not self.stop.wait(0.05):
            self.samples += 1
            for state, event in self.connection.execute(query, [self.database]).fetchall():
                name = f"{state}|{event}"
                self.counts[name] = self.counts.get(name, 0) + 1

    def start(self) -> None:
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        self.thread.join()
        self.connection.close()

    def summary(self, top: int = 6) -> str:
        busy = sorted(
            ((count, name) for name, count in self.counts.items() if not name.startswith("idle")),
            reverse=True,
        )
        samples = max(self.samples, 1)
        parts = [f"{name} {count / samples:.2f}" for count, name in busy[:top]]
        for state in ("idle in transaction", "idle"):
            count = sum(n for name, n in self.counts.items() if name.startswith(f"{state}|"))
            parts.append(f"{state} {count / samples:.2f}")
        return f"waits ({self.samples} samples, connections): " + ", ".join(parts)


def connections_per_worker(port: int) -> str:
    """How the server's keep-alive connections are split between gunicorn's workers (`ss`,
    Linux): each worker serves its connections with its own 4 threads and its own interpreter
    lock, so 12/4 is slower than 8/8 whatever the case."""
    if not shutil.which("ss"):
        return "?"
    listing = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    counts: dict[str, int] = {}
    for pid in re.findall(r"pid=(\d+)", listing):
        counts[pid] = counts.get(pid, 0) + 1
    return "/".join(str(count) for count in sorted(counts.values(), reverse=True)) or "?"


def _stat_fields(path: Path) -> list[str]:
    """The fields of a /proc/<pid>/stat after the command's name (which may hold spaces);
    empty when the process has gone."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


class ServerCpu:
    """The CPU time the service spends on a case: gunicorn (its master and workers) and the
    PostgreSQL backends connected to the benchmark database, from /proc (Linux), so a case's
    cost per record can be compared between two builds on a machine that others load too
    (their throughput moves with the load; the CPU a record costs much less)."""

    def __init__(self, server_pid: int, database_url: str) -> None:
        self.server_pid = server_pid
        self.database_url = database_url
        self.database = database_url.rsplit("/", 1)[1]
        self.tick = os.sysconf("SC_CLK_TCK")

    def _pids(self) -> tuple[list[int], list[int]]:
        """(gunicorn's master and workers, the PostgreSQL backends of the benchmark database)"""
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as connection:
            backends = [
                pid
                for (pid,) in connection.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s "
                    "AND pid <> pg_backend_pid()",
                    [self.database],
                ).fetchall()
            ]
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            fields = _stat_fields(stat)
            if fields and int(fields[1]) == self.server_pid:
                children.append(int(stat.parent.name))
        return [self.server_pid, *children], backends

    def snapshot(self) -> dict[int, tuple[float, bool]]:
        """pid -> (seconds of CPU so far, whether it is a PostgreSQL backend)."""
        seconds = {}
        server, backends = self._pids()
        for pid in [*server, *backends]:
            fields = _stat_fields(Path(f"/proc/{pid}/stat"))
            if fields:  # utime + stime, in clock ticks
                seconds[pid] = ((int(fields[11]) + int(fields[12])) / self.tick, pid in backends)
        return seconds

    @staticmethod
    def spent(before: dict, after: dict) -> tuple[float, float]:
        """Seconds of CPU between two snapshots, in all and in PostgreSQL's backends (a process
        born in between counts whole)."""
        total = database = 0.0
        for pid, (value, is_backend) in after.items():
            spent = value - before.get(pid, (0.0, is_backend))[0]
            total += spent
            database += spent if is_backend else 0.0
        return total, database


def run_case(
    case: Case,
    *,
    port: int,
    credentials: list[dict],
    seconds: float,
    waits_url: str | None = None,
    cpu: ServerCpu | None = None,
) -> dict:
    lanes = []
    for client in range(case.clients):
        credential = credentials[client % case.agents]
        lanes.append((credential["key"], conversation_for(port, credential["key"], case.spread)))
    # One request per client before the clock starts: every worker thread warm.
    warm = Outcome()
    lock = threading.Lock()
    threads = [
        threading.Thread(
            target=client_loop,
            args=(port, key, conversation, case, time.monotonic() + 0.01, warm, lock),
        )
        for key, conversation in lanes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome = Outcome()
    sampler = WaitSampler(waits_url) if waits_url else None
    if sampler:
        sampler.start()
    cpu_before = cpu.snapshot() if cpu else {}
    stop_at = time.monotonic() + seconds
    started = time.monotonic()
    threads = [
        threading.Thread(
            target=client_loop, args=(port, key, conversation, case, stop_at, outcome, lock)
        )
        for key, conversation in lanes
    ]
    for thread in threads:
        thread.start()
    split = "?"
    if sampler:
        time.sleep(min(1.0, seconds / 2))
        split = connections_per_worker(port)
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    cpu_seconds, database_seconds = (
        ServerCpu.spent(cpu_before, cpu.snapshot()) if cpu else (None, 0.0)
    )
    if sampler:
        sampler.finish()
    if outcome.failures or warm.failures:
        raise SystemExit(f"{case.name}: {(outcome.failures or warm.failures)[:3]}")
    latencies = sorted(outcome.latencies) or [0.0]
    return {
        "case": case.name,
        "rate": outcome.requests * case.per_request / elapsed,
        "unit": case.unit,
        "requests": outcome.requests,
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))] * 1000,
        "load": os.getloadavg()[0],
        "waits": f"{sampler.summary()}; connections per worker {split}" if sampler else None,
        # Milliseconds of the service's CPU per 1,000 records.
        "cpu": cpu_seconds * 1e6 / max(outcome.requests * case.per_request, 1)
        if cpu_seconds is not None
        else None,
        "cpu_database": database_seconds * 1e6 / max(outcome.requests * case.per_request, 1),
    }


def cases(args) -> list[Case]:
    json_type, protobuf = "application/json", "application/x-protobuf"
    ingest, traces = "/v1/ingest", "/v1/otlp/v1/traces"
    batch, clients = args.batch, args.clients

    def runs(count):
        return lambda conversation: orjson.dumps(run_records(conversation, count))

    steps_per_request = args.step_runs * args.steps_per_run
    out = [
        Case("runs 1 client x 1 run", "runs", 1, 1, ingest, json_type, 1, runs(1)),
        Case(f"runs {clients} clients x 1 run, 1 Agent", "runs", clients, 1, ingest,
             json_type, 1, runs(1)),
        Case(f"runs {clients} clients x 1 run, {clients} Agents", "runs", clients, clients,
             ingest, json_type, 1, runs(1)),
        Case(f"runs 1 client x {batch}", "runs", 1, 1, ingest, json_type, batch, runs(batch)),
        Case(f"runs {clients} clients x {batch}, 1 Agent", "runs", clients, 1, ingest,
             json_type, batch, runs(batch)),
        Case(f"runs {clients} clients x {batch}, {clients} Agents", "runs", clients, clients,
             ingest, json_type, batch, runs(batch)),
        Case(f"runs 1 client x {batch}, {batch} users", "runs", 1, 1, ingest, json_type, batch,
             lambda conversations: orjson.dumps(spread_run_records(conversations)), batch),
    ]  # fmt: skip
    for count in (1, 4):
        out.append(
            Case(f"steps {count} client(s) x {steps_per_request}", "spans", count, count, ingest,
                 json_type, steps_per_request,
                 lambda conversation: orjson.dumps(
                     step_records(conversation, args.step_runs, args.steps_per_run)))
        )  # fmt: skip
    spans_per_request = args.otlp_traces * args.spans_per_trace
    for count in (1, 4):
        out.append(
            Case(f"otlp {count} client(s) x {spans_per_request}", "spans", count, count, traces,
                 protobuf, spans_per_request,
                 lambda conversation: otlp_body(conversation, args.otlp_traces,
                                                args.spans_per_trace))
        )  # fmt: skip
    if args.only:
        words = [re.compile(rf"(?<![\w.]){re.escape(word)}(?![\w.])") for word in args.only]
        out = [case for case in out if any(word.search(case.name) for word in words)]
    return out


def pairs(args) -> dict[str, tuple[str, str]]:
    """The ratios the issue asks for: per request size, (one-Agent case, spread case)."""
    clients = args.clients
    return {
        size: (f"runs {clients} clients x {size}, 1 Agent",
               f"runs {clients} clients x {size}, {clients} Agents")
        for size in ("1 run", str(args.batch))
    }  # fmt: skip


def schedule(selected: list[Case], args) -> list[tuple[Case, int]]:
    """The cases in their order, each with its round (0 for a case run once): the two cases of
    a pair, when both are selected, `--rounds` times in alternating order from where the first
    of them stood."""
    by_name = {case.name: case for case in selected}
    partner = {}
    for one, spread in pairs(args).values():
        if one in by_name and spread in by_name:
            partner[one] = partner[spread] = (by_name[one], by_name[spread])
    out: list[tuple[Case, int]] = []
    done: set[str] = set()
    for case in selected:
        if case.name in done:
            continue
        if case.name not in partner:
            out.append((case, 0))
            continue
        one, spread = partner[case.name]
        for number in range(1, args.rounds + 1):
            first, second = (one, spread) if number % 2 else (spread, one)
            out += [(first, number), (second, number)]
        done |= {one.name, spread.name}
    return out


def start_server(env: dict, port: int) -> subprocess.Popen:
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "recording_gunicorn.log"
    with open(log, "a") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers", "2",
             "--threads", "4", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip


def wait_until_up(port: int, key: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/v1/connection", headers={"Authorization": f"Bearer {key}"})
            response = connection.getresponse()
            response.read()
            if response.status == 200:
                return
            last = response.status
        except OSError as error:
            last = error
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer at port {port}: {last}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--step-runs", type=int, default=10)
    parser.add_argument("--steps-per-run", type=int, default=99)
    parser.add_argument("--otlp-traces", type=int, default=100)
    parser.add_argument("--spans-per-trace", type=int, default=10)
    parser.add_argument("--port", type=int, default=8771)
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="rounds of each one-Agent / spread pair, alternating which runs first",
    )  # fmt: skip
    parser.add_argument(
        "--waits", action="store_true", help="sample pg_stat_activity's wait events per case"
    )
    parser.add_argument(
        "--dimensions",
        choices=("none", "otlp", "all"),
        default="none",
        help="run dimensions in the OTLP traces (otlp), and in the ingest run records (all)",
    )
    parser.add_argument(
        "--cpu", action="store_true",
        help="also print the service's CPU (gunicorn + its PostgreSQL backends) per 1,000 records",
    )  # fmt: skip
    parser.add_argument("--only", nargs="*", help="run the cases whose name has these words")
    parser.add_argument("--tiny", action="store_true", help="every case, a moment, small sizes")
    args = parser.parse_args()
    global DIMENSIONS
    DIMENSIONS = args.dimensions
    if args.tiny:
        args.seconds, args.clients, args.batch = 0.5, 2, 5
        args.step_runs, args.steps_per_run, args.otlp_traces, args.spans_per_trace = 2, 5, 2, 5
        args.rounds = 2
    args.rounds = max(args.rounds, 1)
    args.clients = min(args.clients, AGENTS - 1)

    database_url = os.environ.get("RECORDING_DATABASE_URL", DEFAULT_URL)
    env = benchmark_environment(database_url)
    credentials = prepare(args.clients)
    load_before = os.getloadavg()
    print(
        f"recording through gunicorn (2 workers x 4 threads), {os.cpu_count()} CPUs, "
        f"{args.seconds:g} s a case; load average before: "
        f"{' / '.join(f'{v:.2f}' for v in load_before)} (1/5/15 min)",
        flush=True,
    )
    server = start_server(env, args.port)
    cpu = ServerCpu(server.pid, database_url) if args.cpu else None
    results = []
    try:
        wait_until_up(args.port, credentials[0]["key"])
        for case, number in schedule(cases(args), args):
            settle(checkpoint=not args.tiny)  # outside the clock: every case on the same footing
            result = run_case(
                case, port=args.port, credentials=credentials, seconds=args.seconds,
                waits_url=database_url if args.waits else None, cpu=cpu,
            )  # fmt: skip
            result["round"] = number
            results.append(result)
            name = result["case"] + (f" [{number}]" if number else "")
            print(
                f"  {name:42s} {result['rate']:9.1f} {result['unit']}/s  "
                f"{result['requests']:6d} requests  p50 {result['p50']:7.1f} ms  "
                f"p95 {result['p95']:7.1f} ms  load {result['load']:.2f}"
                + (
                    f"  CPU {result['cpu']:.0f} ms per 1,000"
                    f" ({result['cpu_database']:.0f} PostgreSQL)"
                    if result["cpu"] is not None
                    else ""
                ),
                flush=True,
            )
            if result["waits"]:
                print(f"      {result['waits']}", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    for size, (one, spread) in pairs(args).items():
        print_ratio(results, size, one, spread, args.clients)


def print_ratio(results: list[dict], size: str, one: str, spread: str, clients: int) -> None:
    """One-Agent / spread, round by round (each round's two cases ran one after the other),
    and their median."""
    rates: dict[tuple[str, int], float] = {
        (result["case"], result["round"]): result["rate"] for result in results
    }
    rounds = sorted({number for name, number in rates if name == one})
    ratios = [
        rates[(one, number)] / rates[(spread, number)]
        for number in rounds
        if rates.get((spread, number))
    ]
    if not ratios:
        return
    median_one = statistics.median(rates[(one, number)] for number in rounds)
    median_spread = statistics.median(rates[(spread, number)] for number in rounds)
    print(
        f"one Agent / {clients} Agents, {size} per request: {statistics.median(ratios):.2f} "
        f"(median of {len(ratios)} round(s); rounds {', '.join(f'{r:.2f}' for r in ratios)}; "
        f"median rates {median_one:.1f} / {median_spread:.1f})"
    )


if __name__ == "__main__":
    main()
