"""A time limit on every database transaction a web request opens (PostgreSQL).

A request must not hold a lock for minutes, whether it waits on a statement or computes between
statements. The first statement of each transaction a request opens is preceded by
`SET LOCAL statement_timeout` and `SET LOCAL idle_in_transaction_session_timeout`, both
`DATABASE_REQUEST_TIMEOUT_SECONDS`: a statement running longer is cancelled, and a transaction
left idle longer (the request busy elsewhere, its locks held) ends its session. Either way the
request fails with a database error, which the API answers `503` with `Retry-After` and the
console with its styled 503 page, and its locks are released.

SET LOCAL lasts as long as the transaction, so it holds behind a pooler in transaction mode
(DATABASE_POOLER=transaction) and never leaks into a Celery task or a migration, which run
without this middleware. Statements outside a transaction (autocommit) hold no lock past their
own end and are left alone.
"""

from django.conf import settings
from django.db import connection
from psycopg.pq import TransactionStatus


class _TransactionTimeout:
    """An execute wrapper: before the statement that begins a transaction, its time limits."""

    def __init__(self, milliseconds: int) -> None:
        self.statement = (
            f"SET LOCAL statement_timeout = {milliseconds}; "
            f"SET LOCAL idle_in_transaction_session_timeout = {milliseconds}"
        )

    def __call__(self, execute, sql, params, many, context):
        db = context["connection"]
        raw = db.connection
        if (
            db.in_atomic_block
            and raw is not None
            and raw.info.transaction_status == TransactionStatus.IDLE
        ):
            # psycopg's own cursor: the wrapper is not entered again.
            context["cursor"].cursor.execute(self.statement, prepare=False)
        return execute(sql, params, many, context)


class StatementTimeoutMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response
        seconds = settings.DATABASE_REQUEST_TIMEOUT_SECONDS
        self.wrapper = _TransactionTimeout(int(seconds * 1000)) if seconds else None

    def __call__(self, request):
        if self.wrapper is None or connection.vendor != "postgresql":
            return self.get_response(request)
        with connection.execute_wrapper(self.wrapper):
            return self.get_response(request)
