"""Empty the test database after a test that commits rows, in milliseconds instead of a second.

Django empties the database after each `transaction=True` test (and each test using a live
server) with one TRUNCATE of every table: PostgreSQL makes new files for all 60 tables and their
330 indexes, 0.3-2 s of wall each time whatever the test wrote, for the 100-odd such tests of
`make test-fast`. Here the flush deletes the rows of only the tables that hold any, with
triggers and foreign-key checks off for that transaction (`session_replication_role =
replica`, as TRUNCATE fires no row triggers either): the database ends exactly as empty. A flush
that must reset sequences, or a database role that may not set that parameter, keeps Django's
TRUNCATE.
"""

from __future__ import annotations

from django.db.backends.postgresql.operations import DatabaseOperations

_truncate = DatabaseOperations.sql_flush


def _sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    if reset_sequences or not tables:
        return _truncate(self, style, tables, reset_sequences=reset_sequences,
                         allow_cascade=allow_cascade)  # fmt: skip
    quoted = [self.quote_name(table) for table in tables]
    holding_rows = " UNION ALL ".join(
        f"(SELECT {index} FROM {name} LIMIT 1)" for index, name in enumerate(quoted)
    )
    with self.connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if not cursor.fetchone()[0]:
            return _truncate(self, style, tables, reset_sequences=reset_sequences,
                             allow_cascade=allow_cascade)  # fmt: skip
        cursor.execute(holding_rows)
        filled = [quoted[index] for (index,) in cursor.fetchall()]
    # Never an empty list, even with nothing to delete: Django's flush sends post_migrate after
    # a non-empty one (content types and permissions made again), as after its TRUNCATE.
    return [
        "SET LOCAL session_replication_role = replica;",
        *(f"DELETE FROM {name};" for name in filled),
        "SET LOCAL session_replication_role = DEFAULT;",
    ]


def install() -> None:
    DatabaseOperations.sql_flush = _sql_flush
