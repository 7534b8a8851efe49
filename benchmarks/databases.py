"""What several benchmarks share: a PostgreSQL database of their own, made when missing, and
the environment the service is measured in."""

import os


def ensure_database(url: str) -> None:
    """Create the database `url` names unless it exists (it is kept for later `--reuse`)."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


def benchmark_environment(database_url: str) -> dict[str, str]:
    """Make the database if missing and set, in this process's environment too, what the
    service runs with while it is measured: that database, Redis (rate limits and the key cache
    live there in production), a rate limit that never refuses, quiet logs. Returns the whole
    environment, for the servers the benchmark starts."""
    ensure_database(database_url)
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/7",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "API_RATE_LIMIT": "100000000/minute",
            "LOG_LEVEL": "WARNING",
            "DEBUG": "0",
        }
    )
    return dict(os.environ)
