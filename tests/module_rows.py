"""Rows made once for a whole test module, for tests that only read them.

`rows_for_the_module(django_db_blocker)` opens a transaction around the module: the fixture
makes its rows inside it, each test of the module then runs in its own savepoint (pytest-django's
`django_db`, rolled back after the test as always, so what one test writes no other sees), and
the transaction is rolled back when the module is done, so nothing is left for the next module.
Only for modules whose tests need no committed rows (no `transaction=True`, no live server).
Call `module_rows_made()` once the rows are made, so queries are planned as on a live database
and no test pays for checking the module's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def rows_for_the_module(django_db_blocker) -> Iterator[None]:
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


def module_rows_made() -> None:
    """Check the rows' foreign keys now, once, and give the planner statistics on them.

    Django checks deferred foreign keys at the end of each test (`SET CONSTRAINTS ALL
    IMMEDIATE`, then the test's savepoint is rolled back, which puts the checks back in the
    queue): left pending, the module's rows were checked again after every test (0.08 s each
    alone, 0.5-1 s each with three test processes on two cores).

    Statistics as autovacuum gives a live database:
    rows made in a transaction that is never committed are never analyzed otherwise, and with
    no statistics PostgreSQL plans for empty tables (a conversation filter by a run's tag then
    scanned every run once per conversation: 0.3 s a query for a demo month instead of 2 ms).
    The column statistics roll back with the rows; the table sizes ANALYZE writes in place stay,
    and the planner scales those by each table's current size."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    connection.check_constraints()
