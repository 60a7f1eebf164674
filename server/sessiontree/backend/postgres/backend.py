"""Sessions kept in PostgreSQL, addressed as files under the sessions root.

A session's name in the store is its path relative to the root (pi's `--<cwd>--/<file>.jsonl`);
the root here is only a namespace, never read or written. Several daemons on several machines may
serve one database: appends are serialised by the session's row lock, and each daemon hears of
the others' appends through LISTEN/NOTIFY (`ChangeFeed`).
"""

from __future__ import annotations

import builtins  # `list` in the class body below is PostgresBackend.list
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg

from ... import jsonfmt
from ...errors import FileNotFound, FileReplaced, PathOutsideRoot, StorageError
from ...file_warning import FileWarning
from ...listing import Summary
from ...paths import encode_cwd, refuse_control_characters
from ...session_summary import SessionSummary
from ...store import Session, file_version
from ...store.migrate import CURRENT_VERSION, migrate_bytes
from .. import Progress
from . import names
from .database import Connection, Database
from .feed import ChangeFeed
from .schema import VERSION, installed_version, migrate
from .search import PostgresSearch
from .storage import PostgresStorage
from .writes import directory_of, insert_session, whole_lines

_OPEN_TRIES = 3  # a session migrated by another daemon while this one waited is opened again, so often


class PostgresBackend:
    poll_seconds = 2.0  # notifications wake the daemon; this only catches one that was missed

    def __init__(self, root: Path, dsn: str) -> None:
        self.root = Path(os.path.abspath(root.expanduser()))
        self.db = Database(dsn)
        self.shown = self.db.shown
        self._schema_ready = False
        self._paths: dict[int, Path] = {}  # the sessions opened here, by sid: what a notification names

    # ------------------------------------------------------------------ names

    def name_of(self, path: str | Path) -> str:
        """The store's name of a path under the root (relative paths are taken from the root)."""
        text = str(path)
        refuse_control_characters(text, "path")
        candidate = Path(text).expanduser()
        candidate = Path(os.path.normpath(candidate if candidate.is_absolute() else self.root / candidate))
        if self.root not in candidate.parents:
            raise PathOutsideRoot(f"{text} is outside the sessions directory {self.root}", path=text, root=str(self.root))
        return candidate.relative_to(self.root).as_posix()

    def resolve(self, path: str) -> Path:
        name = self.name_of(path)
        if self._find(name) is None:
            raise FileNotFound(f"no session {name} in the store", path=path)
        return self.root / name

    def directory_for(self, cwd: str) -> Path:
        refuse_control_characters(cwd, "cwd")
        return self.root / encode_cwd(cwd)

    # ------------------------------------------------------------------ the connection

    def start(self) -> None:
        self.connection()

    def connection(self) -> Connection:
        """The connection, the schema checked (and brought up to date) once per daemon."""
        connection = self.db.connection()
        if not self._schema_ready:
            with self.db.errors():
                found = installed_version(connection)
                if found != VERSION:
                    self._migrate_schema(connection, found)
            self._schema_ready = True
        return connection

    def _migrate_schema(self, connection: Connection, found: int) -> None:
        try:
            migrate(connection)
        except psycopg.errors.InsufficientPrivilege:
            raise StorageError(
                f"the store's schema is version {found} and this sessiontree needs version {VERSION}, which this"
                " role may not make: run `sessiontree store migrate` as the schema's owner",
                store=self.shown,
                schemaVersion=found,
            ) from None

    def _find(self, name: str) -> tuple[int, dict[str, Any]] | None:
        with self.db.errors():
            row = self.connection().execute(
                "SELECT sid, header FROM sessiontree.sessions WHERE name = %s", (name,)
            ).fetchone()
        if row is None:
            return None
        return int(row[0]), jsonfmt.loads(bytes(row[1]))

    # ------------------------------------------------------------------ opening

    def load(self, path: Path, warnings: builtins.list[FileWarning]) -> Session:
        """Migrate if needed (under the row's lock; a daemon that waited for it finds the row renamed
        and opens the new one), then read the session's lines."""
        for _ in range(_OPEN_TRIES):
            storage = self._storage(path)
            with storage.lock():
                if storage.replaced():
                    continue
                version = file_version(storage)
                if version is not None and version < CURRENT_VERSION:
                    warnings.append(self._migrate(storage, version))
                    continue
                session = Session.load(storage)
            self._paths[storage.sid] = path
            return session
        raise FileReplaced("the session kept being replaced while it was opened; try again", path=str(path))

    def _storage(self, path: Path) -> PostgresStorage:
        found = self._find(self.name_of(path))
        if found is None:
            raise FileNotFound(f"no session {self.name_of(path)} in the store", path=str(path))
        sid, header = found
        return PostgresStorage(self.db, sid, self.name_of(path), path, header)

    def _migrate(self, storage: PostgresStorage, version: int) -> FileWarning:
        """A v1/v2 session rewritten as v3 under a new row, in the lock's transaction; the original
        row keeps its bytes under the name `<name>.v<N>.bak`, as the file store keeps a copy."""
        name = self.name_of(storage.path)
        backup = f"{name}.v{version}.bak"
        migrated = migrate_bytes(storage.read(0, storage.size()), version)
        connection = self.connection()
        with self.db.errors():
            connection.execute(
                "UPDATE sessiontree.sessions SET name = %s, directory = %s WHERE sid = %s",
                (backup, directory_of(backup), storage.sid),
            )
            insert_session(connection, name, whole_lines([migrated]))
        return FileWarning(
            "migrated",
            f"migrated from version {version} to {CURRENT_VERSION}; the original is kept at {self.root / backup}",
            path=str(self.root / backup),
        )

    def load_readonly(self, path: Path) -> Session | None:
        try:
            return Session.load(self._storage(path))
        except FileNotFound:
            return None

    def release(self, session: Session, path: Path) -> None:
        session.close()
        storage = session.storage
        if isinstance(storage, PostgresStorage):
            self._paths.pop(storage.sid, None)

    # ------------------------------------------------------------------ new sessions

    def create(self, directory: Path, name: str, chunks: Iterable[bytes]) -> tuple[PostgresStorage, Path]:
        """The session's row and lines in one transaction: no one sees it before it is whole."""
        path = directory / name
        store_name = self.name_of(path)
        connection = self.connection()
        with self.db.errors(), connection.transaction():
            sid, header, _ = insert_session(connection, store_name, whole_lines(chunks))
        self._paths[sid] = path
        return PostgresStorage(self.db, sid, store_name, path, header), path

    # ------------------------------------------------------------------ listing, by SQL

    def list(self, cwd: str | None, progress: Progress | None) -> builtins.list[SessionSummary]:
        if cwd is not None:
            where, args = "directory = %s", [self.name_of(self.directory_for(cwd))]
        else:  # as the file store: the sessions in the root's directories, not deeper
            where, args = "directory <> '.' AND strpos(directory, '/') = 0", []
        with self.db.errors():
            rows = self.connection().execute(
                "SELECT name, header, message_count, first_message, title, last_activity,"
                " extract(epoch FROM updated) * 1000 FROM sessiontree.sessions"
                f" WHERE {where} AND name LIKE '%%.jsonl'",
                args,
            ).fetchall()
        summaries = []
        for name, header, count, first, title, last, updated in rows:
            if not names.is_safe(name):  # not a path below the root: never shown as one
                continue
            summary = Summary(jsonfmt.loads(bytes(header)), count, first, title, last)
            summaries.append(summary.result(self.root / str(name), float(updated)))
        if progress is not None:
            progress(len(rows), len(rows))
        summaries.sort(key=lambda s: s.modified, reverse=True)
        return summaries

    def paths(self, cwd: str) -> builtins.list[Path]:
        directory = self.name_of(self.directory_for(cwd))
        with self.db.errors():
            rows = self.connection().execute(
                "SELECT name FROM sessiontree.sessions WHERE directory = %s AND name LIKE '%%.jsonl' ORDER BY name",
                (directory,),
            ).fetchall()
        return [self.root / str(name) for (name,) in rows if names.is_safe(name)]

    def search_index(self) -> PostgresSearch:
        """PostgreSQL's full-text search over an index in the store (no cache directory needed)."""
        return PostgresSearch(self.db.dsn, self.root, self.connection, self.db)

    # ------------------------------------------------------------------ other daemons' appends

    def changes(self) -> ChangeFeed:
        return ChangeFeed(self.db.dsn, self.db, self._paths)

    # ------------------------------------------------------------------ calls in worker threads (lanes.py)

    def interrupt(self, thread: int) -> None:
        self.db.interrupt(thread)

    def resume(self, thread: int) -> None:
        self.db.resume(thread)

    def close(self) -> None:
        self.db.close()


