"""The search index's SQLite file: made private, checked for its layout, rebuilt when damaged.

The database is a cache derived from the session files, never their source of truth: a file
that is not a database, is damaged, or has another layout is deleted and made afresh, and the
next refresh fills it again. Writes go through one connection (refreshes take a lock); searches
use one connection per thread, so a search reads a committed snapshot while a refresh writes
(WAL).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

log = logging.getLogger("sessiontree.search")

SCHEMA_VERSION: Final = 2  # 2: pi 1.6 entries (context_edit text, system role)
TOKENIZER: Final = "unicode61 remove_diacritics 2"
_SIDE_FILES: Final = ("-wal", "-shm", "-journal")
_CORRUPT_CODES: Final = frozenset({11, 26})  # SQLITE_CORRUPT (and its _VTAB variant), SQLITE_NOTADB
_BUSY_SECONDS: Final = 30.0  # another daemon's refresh holds the write lock for one batch at most

# Daemons sharing an index directory may all find it empty and make the tables at once: each makes
# them in one transaction under SQLite's write lock (BEGIN IMMEDIATE), and every statement is a
# no-op when a daemon before it made the same (IF NOT EXISTS, OR IGNORE), so the second creator
# commits nothing instead of failing on "table meta already exists".
_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    file_id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    kind INTEGER NOT NULL,         -- 0: no whole first line yet, 1: a session, 2: not a session
    session_id TEXT,
    cwd TEXT,
    device INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    size INTEGER NOT NULL,         -- the size and mtime seen when it was last read
    mtime_ns INTEGER NOT NULL,
    indexed INTEGER NOT NULL,      -- every whole line before this offset is in `entries`
    head BLOB NOT NULL,            -- hashes of the 4 KiB at the start and before `indexed`
    tail BLOB NOT NULL,
    last_entry TEXT                -- the last entry in file order: pi's leaf when it loads the file
);
CREATE INDEX IF NOT EXISTS files_by_session ON files(session_id);
CREATE TABLE IF NOT EXISTS entries(
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,  -- the FTS row too; never reused, so it orders indexing
    file_id INTEGER NOT NULL,
    entry_id TEXT,
    parent_id TEXT,
    type TEXT,
    role TEXT,
    timestamp TEXT,
    ts_ms INTEGER,
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL,
    on_path INTEGER NOT NULL DEFAULT 0        -- on the path from the file's last entry to the root
);
CREATE INDEX IF NOT EXISTS entries_by_id ON entries(file_id, entry_id);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, meta, tokenize='{TOKENIZER}');  -- meta: filter tokens (text.py)
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', '{SCHEMA_VERSION}');
"""


def is_corrupt(exc: sqlite3.Error) -> bool:
    """Whether SQLite says the file is damaged or not a database (rather than busy or full)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _CORRUPT_CODES


class Database:
    """The index file at `path`: 0600 in a 0700 directory, WAL, of the current layout."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.generation = 0  # bumped by reset(): threads reopen their reading connections
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self.rebuilt = False  # the file found at open was damaged or of another layout, and made afresh
        self.writer = self._open_checked()

    # ------------------------------------------------------------------ connections

    def reader(self) -> sqlite3.Connection:
        """This thread's reading connection (opened on first use, and again after a reset)."""
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "reader", None)
        if held is not None and held[0] == self.generation:
            return held[1]
        if held is not None:
            held[1].close()
        connection = _connect(self.path, cache_kib=8 * 1024)
        self._local.reader = (self.generation, connection)
        with self._readers_lock:
            self._readers.append(connection)
        return connection

    def reset(self, reason: str) -> None:
        """Throw the file away and start an empty index (it is only a cache)."""
        log.warning("search index %s %s; rebuilding it", self.path, reason)
        with contextlib.suppress(sqlite3.Error):
            self.writer.close()
        _remove(self.path)
        self.generation += 1
        self.writer = self._open_checked()

    def close(self) -> None:
        """Close every connection; no thread may be searching or refreshing meanwhile."""
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for connection in readers:
            connection.close()
        self.writer.close()

    # ------------------------------------------------------------------ opening

    def _open_checked(self) -> sqlite3.Connection:
        """A writing connection to a database of the current layout; anything else is replaced."""
        for attempt in range(2):
            _make_private_file(self.path)
            connection = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY_SECONDS
            )
            try:
                _configure(connection, cache_kib=64 * 1024)
                if _settled(_layout_ok, connection) and _intact(connection):
                    return connection
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc) or attempt:
                    connection.close()
                    raise
            connection.close()
            log.warning("search index %s is damaged or of another layout; rebuilding it", self.path)
            _remove(self.path)
            self.rebuilt = True
        raise RuntimeError("unreachable")  # the second attempt starts from no file


def _settled(check: Callable[[sqlite3.Connection], bool], connection: sqlite3.Connection) -> bool:
    """`check` run again while another daemon making the same fresh file holds its lock: SQLite
    answers SQLITE_BUSY at once, without the busy handler, where waiting could deadlock (a read
    becoming a write). Bounded by _BUSY_SECONDS, as any other wait on the file."""
    deadline = time.monotonic() + _BUSY_SECONDS
    while True:
        try:
            return check(connection)
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _layout_ok(connection: sqlite3.Connection) -> bool:
    """True when the database has the current layout (made here if it is empty)."""
    connection.execute("PRAGMA journal_mode=WAL")  # the first read of the file: NOTADB shows here
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        connection.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")  # safe when another makes it too
        tables = {"meta"}
    if "meta" not in tables:
        return False
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    return row is not None and row[0] == str(SCHEMA_VERSION)


def _intact(connection: sqlite3.Connection) -> bool:
    """SQLite's check of every page's structure (not of the rows' contents, nor of indexes
    against tables): it finds pages zeroed or cut off, which queries may read as no rows without
    an error. It reads the file once, so it runs once per open, in the refreshing thread."""
    rows = connection.execute("PRAGMA quick_check").fetchall()
    return rows == [("ok",)]


def _connect(path: Path, cache_kib: int) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=_BUSY_SECONDS)
    try:
        _configure(connection, cache_kib)
    except BaseException:
        connection.close()
        raise
    return connection


def _configure(connection: sqlite3.Connection, cache_kib: int) -> None:
    connection.execute("PRAGMA synchronous=NORMAL")  # a cache: losing the last commits to a power cut is fine
    connection.execute(f"PRAGMA cache_size=-{cache_kib}")
    connection.execute("PRAGMA temp_store=MEMORY")


def _make_private_file(path: Path) -> None:
    """The directory 0700 and the file 0600 before SQLite opens it (its -wal and -shm files take
    the database file's mode): entries hold the user's conversations."""
    directory = path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    _tighten(directory, 0o700)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:  # a symlink or something else planted at the name: not ours to follow
        _remove(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in _SIDE_FILES:
        _tighten(Path(f"{path}{suffix}"), 0o600)


def _tighten(path: Path, mode: int) -> None:
    """Take group and other access away from a file or directory of ours that has it."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if info.st_uid == os.getuid() and not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, mode)


def _remove(path: Path) -> None:
    for name in (str(path), *(f"{path}{suffix}" for suffix in _SIDE_FILES)):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(name)
