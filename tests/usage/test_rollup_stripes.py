"""The rollup's stripes (apps.usage.models): recordings of one Agent on several database
connections write several rows of one Agent-day, and every reader answers exactly what one row
per Agent-day (a rebuild, which writes stripe 0 only) answers."""

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.db.models import Sum

from apps.usage import tiers
from apps.usage.models import ROLLUP_STRIPES, DailyLatency, DailyUsage
from apps.usage.rollup import connection_stripe, rollup_rebuild, rollup_stripe
from apps.usage.selectors import Period, usage_get
from apps.usage.services import month_credits
from tests.usage.helpers import conversation, record, record_run, rollup_state

pytestmark = pytest.mark.django_db(transaction=True)

CONNECTIONS = 8
# A closed month (sealed into the tier) and today's (read from the daily rows).
MARCH = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("stripes are per PostgreSQL connection; elsewhere there is one")


def _figures(workspace, agent) -> list:
    today = datetime.now(UTC).date()
    periods = [
        Period(start=date(2026, 3, 1), end=today),
        Period(start=date(2026, 3, 1), end=today, granularity="week"),
        Period(start=MARCH.date(), end=MARCH.date() + timedelta(days=1)),
    ]
    answers = []
    for period in periods:
        for only, per_agent_day in ((None, False), (agent, False), (None, True)):
            usage = usage_get(
                workspace=workspace, period=period, agent=only, per_agent_day=per_agent_day
            )
            answers.append(
                {
                    "totals": (usage.totals.counters, usage.totals.latency()),
                    "agents": [(a.pk, f.counters, f.latency()) for a, f in usage.agents],
                    "series": [(s, e, f.counters, f.latency()) for s, e, f in usage.series],
                    "per_agent_day": {
                        key: (f.counters, f.latency()) for key, f in usage.per_agent_day.items()
                    },
                    "month_credits": usage.month_credits,
                }
            )
    answers.append(month_credits(workspace_id=workspace.pk, month=date(2026, 3, 1)))
    return answers


def _record_on_many_connections(agent) -> None:
    """Each connection starts runs, then ends the runs another connection started (moving some
    to another day and latency): a stripe takes away what another one counted."""
    today = datetime.now(UTC).replace(microsecond=0)
    conversations = [conversation(agent, at=MARCH) for _ in range(CONNECTIONS)]
    started = threading.Barrier(CONNECTIONS)
    errors = []

    def worker(index: int) -> None:
        try:
            for n in range(3):
                at = MARCH if n else today
                record_run(agent, at=at, id=f"run_s{index}_{n}", status="streaming",
                           conversation_id=conversations[index], total_turn_latency_ms=None)  # fmt: skip
            started.wait(timeout=60)
            other = (index + 1) % CONNECTIONS
            for n in range(3):
                ended = {"type": "run", "id": f"run_s{other}_{n}", "status": "completed",
                         "total_turn_latency_ms": 100.0 * (other + n + 1)}  # fmt: skip
                if n == 2:
                    ended["created_at"] = (MARCH + timedelta(days=1)).isoformat()
                record(agent, ended)
            record_run(agent, at=MARCH, conversation_id=conversations[index], credits_charged=0.3)
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_connection_keeps_to_one_stripe_in_range(agent):
    assert connection_stripe() == connection_stripe()
    assert 0 <= connection_stripe() < ROLLUP_STRIPES
    # No other recording of the Agent in flight: the connection's own stripe, each time (the
    # claim ends with its transaction).
    assert rollup_stripe(agent.pk) == connection_stripe() == rollup_stripe(agent.pk)


def test_recordings_of_one_agent_in_flight_together_write_different_stripes(agent):
    """As many recordings of one Agent as there are stripes, each holding its transaction open
    until all have written the rollup: none waits for another's row lock (by connection alone,
    two of eight connections shared a stripe by `backend_pid % 8`, and the second waited for
    the first's commit), and each wrote a stripe of its own. Today's runs: a late write (a day
    two days past) also bumps its workspace-month's tier version (migration usage/0004), one
    row whatever the stripe."""
    today = datetime.now(UTC).replace(microsecond=0)
    conversations = [conversation(agent, at=today) for _ in range(ROLLUP_STRIPES)]
    written = [threading.Event() for _ in range(ROLLUP_STRIPES)]
    release = threading.Event()
    stripes: list[int] = []
    pids: list[int] = []
    errors = []

    def worker(index: int) -> None:
        try:
            with transaction.atomic():
                connection.ensure_connection()
                pids.append(connection.connection.info.backend_pid)
                record_run(agent, at=today, conversation_id=conversations[index])
                mine = DailyUsage.objects.filter(agent=agent, day=today.date())
                stripes.extend(mine.values_list("stripe", flat=True))
                written[index].set()
                release.wait(timeout=600)
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(ROLLUP_STRIPES)]
    for thread in threads:
        thread.start()
    waited: list = []
    # Until every recording has written, or one waits for another's row lock (it would wait
    # until the other commits, which waits for it): no clock, so a paused machine cannot fail it.
    try:
        with connections_to_watch() as watch:
            while not all(event.is_set() for event in written) and not errors:
                waited = watch.execute(
                    "SELECT lock.locktype, lock.relation::regclass::text, activity.query "
                    "FROM pg_locks lock JOIN pg_stat_activity activity USING (pid) "
                    "WHERE NOT lock.granted AND lock.pid = ANY(%s) "
                    # A row's lock (not a moment's wait to extend a table).
                    "AND lock.locktype IN ('transactionid', 'tuple')",
                    [pids],
                ).fetchall()
                if waited:
                    break
                time.sleep(0.05)
    finally:
        release.set()
    for thread in threads:
        thread.join()
    assert errors == []
    assert waited == [], f"a recording of the Agent waited for another's lock: {waited!r}"
    # Each saw its own uncommitted row, and only it.
    assert sorted(stripes) == list(range(ROLLUP_STRIPES))
    row = DailyUsage.objects.filter(agent=agent, day=today.date()).aggregate(runs=Sum("runs"))
    assert row["runs"] == ROLLUP_STRIPES


@contextlib.contextmanager
def connections_to_watch() -> Iterator[psycopg.Connection]:
    """A connection of its own to the test database, in autocommit, to read pg_locks."""
    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"],
        host=settings["HOST"], port=settings["PORT"] or None, autocommit=True,
    ) as watch:  # fmt: skip
        yield watch


def test_usage_read_from_stripes_equals_usage_read_from_one_row_per_agent_day(
    workspace, agent, sibling_agent
):
    _record_on_many_connections(agent)
    record_run(sibling_agent, at=MARCH)
    march = DailyUsage.objects.filter(agent=agent, day=MARCH.date())
    assert march.values("stripe").distinct().count() > 1, "one stripe: nothing tested"
    striped_rollup, striped = rollup_state(), _figures(workspace, agent)

    rollup_rebuild()
    assert set(DailyUsage.objects.values_list("stripe", flat=True)) == {0}
    assert set(DailyLatency.objects.values_list("stripe", flat=True)) == {0}
    assert rollup_state() == striped_rollup
    assert _figures(workspace, agent) == striped
    totals = striped[0]["totals"][0]
    assert (totals["runs"], totals["completed_runs"], totals["streaming_runs"]) == (33, 33, 0)


def test_sealed_months_of_striped_rows_answer_as_the_daily_rows(workspace, agent):
    _record_on_many_connections(agent)
    before = _figures(workspace, agent)
    result = tiers.months_seal()
    assert result.finished and result.sealed >= 1
    assert _figures(workspace, agent) == before
