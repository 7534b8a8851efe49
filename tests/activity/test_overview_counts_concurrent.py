"""The Overview's per-day counts of users and conversations (apps.activity.rollup_counts) under
recordings in flight together on several connections: each connection claims its own stripe,
so a user's first run of a day is counted in one stripe and its row removed (the run moved to
another user) in another; the counts summed stay the number of user and conversation rows, and
every figure the one counted from the runs."""

import threading
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count, Sum

from apps.activity.models import Rollup
from apps.activity.overview_rollup import COUNTED, COUNTS, overview_of_rollups
from apps.activity.overview_runs import overview_of_runs
from apps.activity.overview_types import OverviewScope
from tests.activity.test_overview_rollup import _assert_rollup_is_its_rebuild
from tests.usage.helpers import record, record_run

pytestmark = pytest.mark.django_db(transaction=True)

CONNECTIONS = 8
DAY = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)  # two days a month's edge apart: Mar 30, Apr 1


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("stripes are per PostgreSQL connection; elsewhere there is one")


def _record_together(agent) -> None:
    """Each connection records runs of the same four users and conversations on two days, then
    moves the runs another connection recorded to another user."""
    for n in range(5):
        record(agent, {"type": "user", "id": f"usr_cc{n}"})
    for n in range(4):
        record(agent, {"type": "conversation", "id": f"conv_cc{n}",
                       "created_at": DAY.isoformat()})  # fmt: skip
    started = threading.Barrier(CONNECTIONS)
    errors = []

    def worker(index: int) -> None:
        try:
            for n in range(2):
                record_run(agent, at=DAY + timedelta(days=2 * n, minutes=index),
                           id=f"run_cc{index}_{n}", user_id=f"usr_cc{(index + n) % 4}",
                           conversation_id=f"conv_cc{index % 4}")  # fmt: skip
            started.wait(timeout=60)
            other = (index + 1) % CONNECTIONS
            for n in range(2):
                # Day one's runs all go to a fifth user: every first user-day row of that day
                # is emptied (removed, its count taken away) and the fifth user's inserted once.
                moved_to = 4 if n == 0 else (other + 2) % 4
                record(agent, {"type": "run", "id": f"run_cc{other}_{n}",
                               "user_id": f"usr_cc{moved_to}"})  # fmt: skip
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


def test_counts_of_users_and_conversations_hold_under_recordings_in_flight(agent):
    _record_together(agent)
    counted = {
        (row["day"], row["key"]): row["n"]
        for row in Rollup.objects.filter(agent=agent, group=COUNTS)
        .values("day", "key")
        .annotate(n=Sum("count"))
    }
    rows = {
        (row["day"], row["group"]): row["n"]
        for row in Rollup.objects.filter(agent=agent, group__in=COUNTED)
        .values("day", "group")
        .annotate(n=Count("*"))
    }
    assert {key: n for key, n in counted.items() if n} == rows
    assert rows[(date(2026, 3, 30), "ov_user")] == 1 and rows[(date(2026, 4, 1), "ov_user")] >= 2
    stripes = Rollup.objects.filter(agent=agent, group=COUNTS).values("stripe").distinct()
    assert stripes.count() > 1  # the counts were written from several stripes
    scope = OverviewScope(first_day=date(2026, 3, 1), last_day=date(2026, 4, 30))
    assert overview_of_rollups(agent.pk, scope) == overview_of_runs(agent.pk, scope)
    _assert_rollup_is_its_rebuild(agent)
