"""`SearchIndex`: full-text search over the sessions under one root, kept in SQLite's FTS5."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from ..errors import StorageError
from . import query as q
from .database import Database, is_corrupt
from .leafpath import PATH_FROM_LAST
from .model import RefreshStats, SearchHit, SearchPage, Syntax
from .refresh import Cancelled, OtherSession, Progress, Refresher

log = logging.getLogger("sessiontree.search")

RANK_WINDOW: Final = 10_000
CLOSE_WAIT_SECONDS: Final = 10.0  # how long `close` waits for a refresh in another thread to stop

LeafPath = Callable[[str], Set[str] | None]  # a session file's path -> the ids on its leaf's path, if known


def index_path(cache_dir: Path, root: Path) -> Path:
    """Where the index of the sessions under `root` lives in `cache_dir` (the sidecars' directory):
    one database per root, named by a hash of it."""
    digest = hashlib.blake2b(os.fsencode(root), digest_size=8).hexdigest()
    return cache_dir / f"search-{digest}.sqlite3"


class SearchIndex:
    """The index of every session file under one root: a cache, rebuilt when it is damaged.

    `refresh` may run in a worker thread while `search` answers from another: searches read the
    last committed state. Refreshes are serialized (within a process by a lock, between daemons
    by SQLite's write lock, one batch at a time)."""

    def __init__(self, path: Path, rank_window: int = RANK_WINDOW) -> None:
        self.path = path
        self.rank_window = rank_window
        self._write_lock = threading.Lock()  # held by a refresh, and by `close`
        self._closing = threading.Event()  # set by `close`: a refresh under way stops
        self._damaged = False  # a search met a damaged file: the next refresh rebuilds
        try:
            self._db = Database(path)
        except sqlite3.Error as exc:
            raise _storage_error(path, exc) from None
        except OSError as exc:
            raise StorageError(
                f"could not open the search index {path}: {exc.strerror or exc}", path=str(path)
            ) from None

    # ------------------------------------------------------------------ refreshing

    def refresh(
        self,
        root: Path,
        files: Iterable[Path] | None = None,
        progress: Progress | None = None,
        cancelled: Cancelled | None = None,
        others: Mapping[str, OtherSession] | None = None,
    ) -> RefreshStats:
        """Bring the index up to date with the session files under `root` (resolved) and `others`
        (other agents' sessions, by path), or only
        with `files` (paths below it; those gone are dropped). `progress(done, total)` after
        each file; `cancelled()` is asked between files and batches: a cancelled refresh keeps
        what it indexed (stats.cancelled); so does one under way when the index is closed."""

        def stopping() -> bool:
            return self._closing.is_set() or (cancelled is not None and cancelled())

        with self._write_lock:
            rebuilt = False
            for attempt in range(2):
                if self._closing.is_set():
                    return RefreshStats(cancelled=True)
                try:
                    rebuilt = self._take_root(root) or rebuilt
                    stats = Refresher(self._db.writer, root, stopping, others).run(files, progress)
                except sqlite3.DatabaseError as exc:
                    if self._closing.is_set():  # `close` interrupted a statement: what was committed stays
                        return RefreshStats(cancelled=True, rebuilt=rebuilt)
                    if attempt or not is_corrupt(exc):
                        raise _storage_error(self.path, exc) from None
                    self._db.reset("is damaged")
                    rebuilt, files = True, None  # an empty index: every file, not only those asked for
                    continue
                stats.rebuilt = rebuilt or self._db.rebuilt
                self._db.rebuilt = False
                return stats
        raise AssertionError("unreachable")

    def _take_root(self, root: Path) -> bool:
        """Bind the index to `root`; an index of another root, or one a search found damaged,
        starts afresh. True when it did."""
        rebuilt = False
        if self._damaged:
            self._db.reset("is damaged")
            self._damaged, rebuilt = False, True
        row = self._db.writer.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
        if row is not None and row[0] == str(root):
            return rebuilt
        if row is not None:
            self._db.reset(f"was made for {row[0]}, not {root}")
            rebuilt = True
        self._db.writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('root', ?)", (str(root),))
        return rebuilt

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str,
        *,
        syntax: Syntax = "fts",
        cwd: str | None = None,
        session: str | None = None,
        roles: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int = 20,
        cursor: str | None = None,
        leaf_path: LeafPath | None = None,
    ) -> SearchPage:
        """A page of hits, best first. `leaf_path(path)` gives the entry ids on the path of an
        open session's current leaf (None: not open); for other sessions the leaf is the last
        entry in file order, as pi loads it, and the path comes from the index."""
        request = q.request_of(query, syntax, cwd, session, roles, types, since_ms, until_ms, limit, cursor)
        expression, filters, key, position = request.expression, request.filters, request.key, request.position
        db = self._db.reader()
        try:
            db.execute("BEGIN")  # one snapshot for every step of the page
            try:
                return self._page(db, expression, filters, key, position, limit, leaf_path)
            finally:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")  # it only read
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise _storage_error(self.path, exc) from None
            self._damaged = True  # never an empty page for a damaged file: the next refresh rebuilds
            message = f"the search index {self.path} is damaged ({exc}); the next refresh rebuilds it"
            raise IndexDamaged(message, path=str(self.path)) from None

    def _page(
        self,
        db: sqlite3.Connection,
        expression: str,
        filters: q.Filters,
        key: str,
        position: q.Position | None,
        limit: int,
        leaf_path: LeafPath | None,
    ) -> SearchPage:
        file_ids = q.session_file_ids(db, filters.session) if filters.session is not None else None
        if file_ids == [] or filters.empty:  # no such session indexed, or no role or type allowed
            return SearchPage()
        expression = q.scoped(expression, filters, file_ids)
        rows, after = self._ranked(db, expression, filters, position or q.Position(q.newest_rowid(db), None, 0), limit)
        found = q.details(db, expression, [rowid for rowid, _ in rows])
        paths: dict[str, Set[str] | None] = {}
        hits = [self._hit(found[rowid], score, paths, leaf_path) for rowid, score in rows if rowid in found]
        return SearchPage(hits, q.encode_cursor(key, after) if after is not None else None)

    def _ranked(
        self, db: sqlite3.Connection, expression: str, filters: q.Filters, position: q.Position, limit: int
    ) -> tuple[list[tuple[int, float]], q.Position | None]:
        """Up to `limit` (rowid, bm25) from `position` on, crossing into older windows as needed,
        and where the next page starts (None: nothing more)."""
        found: list[tuple[int, float]] = []
        while True:
            low = position.low
            if low is None:
                low = q.window_low(db, expression, position.high, self.rank_window)
            need = limit - len(found)
            rows = q.ranked(db, expression, filters, position.high, low, need + 1, position.offset)
            found += rows[:need]
            if len(rows) > need:
                return found, q.Position(position.high, low, position.offset + need)
            if low == 0:  # this window reached the oldest match
                return found, None
            position = q.Position(low - 1, None, 0)
            if len(found) == limit:
                return found, position

    @staticmethod
    def _hit(
        row: tuple[Any, ...],
        score: float,
        paths: dict[str, Set[str] | None],
        leaf_path: LeafPath | None,
    ) -> SearchHit:
        path, session_id, cwd, entry_id, parent_id, type_, role, timestamp, ms, offset, on_path, marked = row
        if path not in paths:
            paths[path] = leaf_path(path) if leaf_path is not None else None
        known = paths[path]
        if known is not None:  # an open session: its own leaf, wherever the client moved it
            on_path = entry_id is not None and entry_id in known
        snippet, highlights = q.split_snippet(marked)
        return SearchHit(
            path=path,
            session_id=session_id,
            cwd=cwd,
            entry_id=entry_id,
            parent_id=parent_id,
            type=type_ or "",
            role=role,
            timestamp=timestamp,
            timestamp_ms=ms,
            offset=offset,
            snippet=snippet,
            highlights=highlights,
            score=-score,
            on_leaf_path=bool(on_path),
        )

    # ------------------------------------------------------------------ the leaf's path

    def path_from_last_entry(self, session_path: str) -> frozenset[str]:
        """The ids on the path from the session file's last entry (pi's leaf when it loads the
        file) to its root, from the index alone (as far as the last refresh read the file)."""
        try:
            return self._path_from_last(self._db.reader(), session_path)
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise _storage_error(self.path, exc) from None
            self._damaged = True
            return frozenset()

    def _path_from_last(self, db: sqlite3.Connection, session_path: str) -> frozenset[str]:
        row = db.execute("SELECT file_id FROM files WHERE path = ?", (session_path,)).fetchone()
        if row is None:
            return frozenset()
        return frozenset(id_ for (id_,) in db.execute(PATH_FROM_LAST, {"file": row[0]}))

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Stop a refresh under way in another thread (its statement interrupted, between files
        and batches otherwise), wait for it (bounded), then close every connection. A connection is
        never closed while another thread runs a statement on it (SQLite would crash the process):
        a refresh that does not stop in time keeps its connection until the process ends, which
        loses nothing (every batch is a transaction)."""
        self._closing.set()
        if not self._write_lock.acquire(blocking=False):  # a refresh is under way
            with contextlib.suppress(sqlite3.Error):
                self._db.writer.interrupt()  # safe from any thread
            if not self._write_lock.acquire(timeout=CLOSE_WAIT_SECONDS):
                log.warning("search index %s: a refresh did not stop in %s s; left open", self.path, CLOSE_WAIT_SECONDS)
                return
            with contextlib.suppress(sqlite3.Error):  # an interrupt that came after the last statement
                self._db.writer.execute("SELECT 1").fetchall()  # is spent here, not on the closing checkpoint
        try:
            self._db.close()
        finally:
            self._write_lock.release()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class IndexDamaged(StorageError):
    """A search found the index damaged: it answered nothing, and the next refresh rebuilds the
    index (the daemon does so at once and searches again)."""


def _storage_error(path: Path, exc: sqlite3.Error) -> StorageError:
    return StorageError(f"the search index {path} could not be used: {exc}", path=str(path))
