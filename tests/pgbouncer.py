"""A private PgBouncer (Debian's `pgbouncer`) in transaction mode on a free loopback port, in
front of the machine's PostgreSQL: the scale-out topology's pooler (docs/operations.md)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.redis_server import free_port

CONFIG = """\
[databases]
* = host={host} port={upstream_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
admin_users = {user}
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 200
query_wait_timeout = 10
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
"""


class PgBouncer:
    def __init__(self, folder: Path, *, upstream_host: str, upstream_port: int, user: str,
                 pool_size: int) -> None:  # fmt: skip
        self.folder = folder
        self.port = free_port()
        self.user = user
        self.settings = {"host": upstream_host, "upstream_port": upstream_port, "port": self.port,
                         "folder": folder, "user": user, "pool_size": pool_size}  # fmt: skip
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("pgbouncer") is not None

    def start(self) -> PgBouncer:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "pgbouncer.ini").write_text(CONFIG.format(**self.settings))
        (self.folder / "userlist.txt").write_text(f'"{self.user}" ""\n')
        command = [shutil.which("pgbouncer") or "pgbouncer", str(self.folder / "pgbouncer.ini")]
        if os.geteuid() == 0:
            # PgBouncer refuses to run as root: it drops to the postgres account.
            account = pwd.getpwnam("postgres")
            for path in (self.folder, *self.folder.iterdir()):
                os.chown(path, account.pw_uid, account.pw_gid)
            command += ["-u", "postgres"]
        self.process = subprocess.Popen(command, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pgbouncer did not start: {self.log()}")

    def url(self, database: str) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{database}"

    def admin(self, command: str) -> list[dict]:
        """A command of PgBouncer's admin console (SHOW POOLS, ...), as dicts."""
        import psycopg

        with psycopg.connect(self.url("pgbouncer"), autocommit=True) as connection:
            cursor = connection.execute(command)
            names = [column.name for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
