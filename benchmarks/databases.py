"""What several benchmarks share: a PostgreSQL database of their own, made when missing."""


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
