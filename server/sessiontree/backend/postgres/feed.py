"""Other daemons' appends, heard through LISTEN/NOTIFY on a connection of its own.

A notification only wakes the daemon: the session is then read from where this daemon last read
it (its cursor), so a notification missed while the connection was down loses nothing; the
daemon's slow poll, and a full check after reconnecting, catch up.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import psycopg

from .database import Connection, Database
from .schema import CHANNEL


class ChangeFeed:
    def __init__(self, dsn: str, db: Database, paths: dict[int, Path]) -> None:
        self._db = Database(dsn)  # not the daemon's connection: this one only listens
        self._shown = db.shown
        self._paths = paths
        self._connection: Connection | None = None

    def start(self) -> int:
        """Connect and LISTEN; returns the socket to wait on (raises StoreUnavailable)."""
        self.stop()
        connection = self._db.connection()
        with self._db.errors():
            connection.execute(f"LISTEN {CHANNEL}")
        self._connection = connection
        return connection.pgconn.socket

    def drain(self) -> set[Path]:
        """The open sessions named by the notifications that arrived (raises StoreUnavailable when
        the connection is lost)."""
        connection = self._connection
        if connection is None:
            return set()
        changed: set[Path] = set()
        with self._db.errors():
            connection.pgconn.consume_input()
            while (notice := connection.pgconn.notifies()) is not None:
                with contextlib.suppress(ValueError):
                    path = self._paths.get(int(notice.extra))
                    if path is not None:
                        changed.add(path)
            if connection.pgconn.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError("the listening connection was closed")
        return changed

    def stop(self) -> None:
        self._connection = None
        self._db.close()
