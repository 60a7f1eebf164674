"""A throwaway PostgreSQL server for the tests: `initdb` into a temporary directory, listening on
a Unix socket only, stopped (and its files removed) at the end.

The server refuses to run as root, so under root it runs as the `postgres` user Debian's package
creates. Debian keeps the programs outside PATH, under /usr/lib/postgresql/<major>/bin.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SERVER_USER = "postgres"


def server_bin() -> Path | None:
    """The directory of `initdb` and `pg_ctl`: PATH first, then Debian's place (newest major)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


REQUIRE_ENV = "SESSIONTREE_REQUIRE_POSTGRES"  # `make test` sets it: there a missing server fails


@contextlib.contextmanager
def running_cluster(password: str | None = None) -> Iterator[Cluster]:
    """A throwaway server, started, and stopped and removed afterwards. Without PostgreSQL the test
    is skipped, or fails where $SESSIONTREE_REQUIRE_POSTGRES says it must run."""
    import pytest

    bin_dir = server_bin()
    if bin_dir is None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail("PostgreSQL is not installed: `make postgres` installs it")
        pytest.skip("PostgreSQL is not installed (`make postgres`)")
    cluster = Cluster(bin_dir)
    try:
        cluster.init(password)
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.stop("immediate")
        cluster.remove()


class Cluster:
    """One server on a socket in its own directory; `dsn(db)` reaches a database on it."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.password: str | None = None
        self.base = Path(tempfile.mkdtemp(prefix="sessiontree-pg-"))
        self.data = self.base / "data"
        self._as_root = os.geteuid() == 0
        if self._as_root:  # the server's user must own its directories
            user = pwd.getpwnam(_SERVER_USER)
            os.chown(self.base, user.pw_uid, user.pw_gid)
        self.base.chmod(0o755)

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", _SERVER_USER, "--"] if self._as_root else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def init(self, password: str | None = None) -> None:
        """Without a password anyone on the socket is let in (trust); with one, the `postgres` role
        has it and every connection must give it (scram-sha-256)."""
        self.password = password
        if password is None:
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
            return
        secret = self.base / "pwfile"
        secret.write_text(password + "\n")
        if self._as_root:
            user = pwd.getpwnam(_SERVER_USER)
            os.chown(secret, user.pw_uid, user.pw_gid)
        initdb = str(self.bin / "initdb")
        self._run(initdb, "-D", str(self.data), "-A", "scram-sha-256", f"--pwfile={secret}", "-U", "postgres", "--no-sync")
        secret.unlink()

    def start(self, settings: str = "-c fsync=off") -> None:
        """Start on the socket; `settings` are more server options (tests need no crash safety)."""
        options = f"-k {self.base} -c listen_addresses='' -c max_connections=60 {settings}"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.base / "log"), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.base}"

    def create_database(self, name: str) -> str:
        """A fresh database (dropped first if a test left one) and its DSN."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True, password=self.password) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def storage_with(dsn: str, data: bytes, name: str) -> Any:
    """A session row holding `data` as its lines (header or not), as a PostgresStorage."""
    from sessiontree.backend.postgres.database import Database
    from sessiontree.backend.postgres.schema import migrate
    from sessiontree.backend.postgres.storage import PostgresStorage

    db = Database(dsn)
    connection = db.connection()
    migrate(connection)
    with connection.transaction():
        row = connection.execute(
            "INSERT INTO sessiontree.sessions (name, directory, header, size) VALUES (%s, '.', '{}', 0) RETURNING sid",
            (name,),
        ).fetchone()
        assert row is not None
        sid = int(row[0])
        _write_rows(connection, sid, data)
    return PostgresStorage(db, sid, name, Path("/sessions") / name, {})


def _write_rows(connection: Any, sid: int, data: bytes) -> None:
    from sessiontree.backend.postgres.storage import entry_id_of, pieces

    for offset, piece in pieces(data, 0):
        connection.execute(
            "INSERT INTO sessiontree.lines (sid, off, entry_id, data) VALUES (%s, %s, %s, %s)",
            (sid, offset, entry_id_of(piece), piece),
        )
    connection.execute("UPDATE sessiontree.sessions SET size = %s WHERE sid = %s", (len(data), sid))


def other_daemon_appends(storage: Any, data: bytes) -> None:
    """Another daemon's append to the same session row, on a connection of its own."""
    from sessiontree.backend.postgres.database import Database
    from sessiontree.backend.postgres.storage import PostgresStorage

    db = Database(storage.db.dsn)
    try:
        PostgresStorage(db, storage.sid, storage.store_name, storage.path, {}).append(data)
    finally:
        db.close()


def other_program_rewrites(storage: Any, data: bytes) -> None:
    """Someone with SQL access replaces the session's rows (sessiontree itself never does)."""
    import psycopg

    with psycopg.connect(storage.db.dsn, autocommit=True) as connection, connection.transaction():
        connection.execute("DELETE FROM sessiontree.lines WHERE sid = %s", (storage.sid,))
        _write_rows(connection, storage.sid, data)
