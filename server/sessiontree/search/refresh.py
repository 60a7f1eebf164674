"""Bringing the index up to date with the session files, reading as little as possible.

For each file the index keeps what it saw: device, inode, size, mtime, how far whole lines were
indexed, and hashes of the first 4 KiB and of the 4 KiB before that offset. A file whose stat
is unchanged is not opened. One that only grew, with both hashed windows intact, is read from
where the last refresh stopped; anything else (another inode, shorter, rewritten at the same
size, different bytes at either window: a rename over it, pi's migration in place, an edit) is
dropped and read again from the start. A last line without its line end is left for the next
refresh: its writer may still be writing it.

Rows are written in batches inside transactions that also record how far each file was read,
so a cancel or a crash leaves every file indexed up to a line end, and the next refresh
continues from there.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import math
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from .. import jsonfmt
from ..entries import iso_to_ms
from ..errors import SessionTreeError, StorageError
from ..listing import session_files, subdirectories, with_nested
from ..store import FileStorage, confined
from ..store.lines import BOM, LineReader
from .leafpath import follow_leaf
from .model import RefreshStats
from .text import meta_text, role_and_text, scrub

log = logging.getLogger("sessiontree.search")

WINDOW: Final = 4096  # bytes hashed at the start of a file and before its indexed offset
_READ_CHUNK: Final = 1024 * 1024
_FLUSH_BYTES: Final = 4 * 1024 * 1024  # lines held in memory before their rows are written
_COMMIT_BYTES: Final = 8 * 1024 * 1024  # rows written before a commit (bounds the WAL and a lost batch)
_EXHAUSTED: Final = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS)
_MAX_MS: Final = 2**53  # JavaScript's exact integers; beyond them a "timestamp" is no time (and no SQLite integer)

PENDING, SESSION, OTHER = 0, 1, 2  # files.kind: no whole first line yet, a session, not a session

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]


class Stat(Protocol):
    """What the index keeps of a file's state: a real `os.stat_result`, or a translation's."""

    @property
    def st_dev(self) -> int: ...
    @property
    def st_ino(self) -> int: ...
    @property
    def st_size(self) -> int: ...
    @property
    def st_mtime_ns(self) -> int: ...


class Readable(Protocol):
    """What a refresh reads a session from: a file, or another agent's session rendered as pi's."""

    def read(self, offset: int, length: int) -> bytes: ...

    def stat(self) -> Stat: ...

    def close(self) -> None: ...


class OtherSession(Protocol):
    """A session that is no file under the root (another agent's): its state, known without
    reading it, and the session rendered as pi's lines when it must be read."""

    def stat(self) -> Stat | None: ...

    def open(self) -> Readable: ...


@dataclass(slots=True)
class FileState:
    """A row of `files`: what the index holds of one file."""

    file_id: int
    kind: int
    session_id: str | None
    cwd: str | None
    device: int
    inode: int
    size: int
    mtime_ns: int
    indexed: int
    head: bytes
    tail: bytes
    last_entry: str | None

    def same_stat(self, info: Stat) -> bool:
        return (self.device, self.inode, self.size, self.mtime_ns) == (
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
        )


_STATE_COLUMNS: Final = "file_id, kind, session_id, cwd, device, inode, size, mtime_ns, indexed, head, tail, last_entry"


def load_states(db: sqlite3.Connection) -> dict[str, FileState]:
    rows = db.execute(f"SELECT path, {_STATE_COLUMNS} FROM files")
    return {row[0]: FileState(*row[1:]) for row in rows}


def _load_state(db: sqlite3.Connection, path: str) -> FileState | None:
    row = db.execute(f"SELECT {_STATE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
    return FileState(*row) if row else None


def window_hashes(read: Callable[[int, int], bytes], indexed: int) -> tuple[bytes, bytes]:
    """Hashes of `[0, 4 KiB)` and `[indexed - 4 KiB, indexed)`, both clipped to `[0, indexed)`."""
    start = max(0, indexed - WINDOW)
    head = hashlib.blake2b(read(0, min(WINDOW, indexed)), digest_size=16).digest()
    tail = hashlib.blake2b(read(start, indexed - start), digest_size=16).digest()
    return head, tail


def only_grew(state: FileState, info: Stat, read: Callable[[int, int], bytes]) -> bool:
    """Whether the file is the one indexed, with bytes only appended since: then reading from
    `state.indexed` is enough. Session files only ever grow, so the same size with another mtime
    means a rewrite in place."""
    if (info.st_dev, info.st_ino) != (state.device, state.inode) or info.st_size <= state.size:
        return False
    return window_hashes(read, state.indexed) == (state.head, state.tail)


class Refresher:
    """One refresh over one connection; not reused."""

    def __init__(
        self, db: sqlite3.Connection, root: Path, cancelled: Cancelled | None, others: Mapping[str, OtherSession] | None = None
    ) -> None:
        self.db = db
        self.root = root
        self.others = others or {}  # other agents' sessions, by path, indexed beside the root's files
        self.cancelled = cancelled or (lambda: False)
        self.stats = RefreshStats()
        self._next_rowid = 0
        self._uncommitted = 0

    # ------------------------------------------------------------------ the walk

    def run(self, files: Iterable[Path] | None, progress: Progress | None) -> RefreshStats:
        try:
            self._run(files, progress)
        except BaseException:
            if self.db.in_transaction:  # the batch goes; what was committed is whole
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            raise
        self._commit()
        return self.stats

    def _run(self, files: Iterable[Path] | None, progress: Progress | None) -> None:
        known = load_states(self.db)
        if files is None:
            folders = with_nested(self.root, [self.root / name for name in subdirectories(self.root)])
            paths = session_files(self.root, folders)  # sub-agents' sessions in nested folders too
            paths += [Path(path) for path in self.others]
            self._drop_gone(known, {str(path) for path in paths})
        else:
            paths = list(dict.fromkeys(files))
        for done, path in enumerate(paths, start=1):
            if self.cancelled():
                self.stats.cancelled = True
                return
            self.stats.files_seen += 1
            self._refresh_file(path, known.get(str(path)))
            if self.stats.cancelled:
                return
            if progress is not None:
                progress(done, len(paths))

    def _drop_gone(self, known: dict[str, FileState], present: set[str]) -> None:
        for path, state in known.items():
            if path not in present:
                self._begin()
                self._forget(state.file_id, delete_file=True)
                self.stats.files_removed += 1

    def _refresh_file(self, path: Path, known: FileState | None) -> None:
        if not _is_text(str(path)):  # a name that is not UTF-8 cannot be stored, nor named in JSON
            return
        other = self.others.get(str(path))
        if other is not None:
            self._refresh_other(path, other, known)
            return
        if known is not None and _unchanged_by_name(path, known):
            self.stats.files_unchanged += 1
            return
        try:
            fd = confined.open_file(self.root, path, os.O_RDONLY)
        except (SessionTreeError, OSError) as exc:  # gone, a link, a FIFO, hard-linked: not served
            _raise_if_exhausted(path, exc)
            self._drop_path(str(path))
            return
        storage = FileStorage(path, writable=False, fd=fd)
        try:
            self._refresh_open(path, storage)
        except OSError as exc:  # the disk refused a read: keep what is indexed, try again next time
            _raise_if_exhausted(path, exc)
            log.warning("search index: could not read %s: %s", path, exc)
        finally:
            storage.close()

    def _refresh_other(self, path: Path, other: OtherSession, known: FileState | None) -> None:
        """Another agent's session: translated only when its files changed since the last refresh."""
        info = other.stat()
        if info is None:
            self._drop_path(str(path))
            return
        if known is not None and (known.device, known.inode, known.mtime_ns) == (info.st_dev, info.st_ino, info.st_mtime_ns):
            self.stats.files_unchanged += 1
            return
        try:
            rendered = other.open()
        except (SessionTreeError, OSError, ValueError) as exc:
            _raise_if_exhausted(path, exc)
            self._drop_path(str(path))
            return
        try:
            self._refresh_open(path, rendered)
        finally:
            rendered.close()

    def _refresh_open(self, path: Path, storage: Readable) -> None:
        info = storage.stat()
        self._begin()
        state = _load_state(self.db, str(path))  # again, inside the transaction: another daemon may have indexed it
        if state is not None and state.same_stat(info):
            self.stats.files_unchanged += 1
            return
        if state is not None and only_grew(state, info, storage.read):
            if state.kind == OTHER:  # still not a session: nothing to read
                self._save_state(state, info, storage)
                self.stats.files_unchanged += 1
                return
            self.stats.files_appended += 1
        else:
            state = self._restart(str(path), state, info)
            self.stats.files_reindexed += 1
        self._index_lines(state, info, storage)

    # ------------------------------------------------------------------ reading lines

    def _index_lines(self, state: FileState, info: Stat, storage: Readable) -> None:
        """Index the whole lines in `[state.indexed, size)`, writing rows in bounded batches."""
        start = state.indexed
        reader = LineReader(storage, start, info.st_size, chunk=_READ_CHUNK)
        batch: list[tuple[Any, ...]] = []
        held = 0
        leaf_before = state.last_entry
        for offset, line in reader:
            end = offset + len(line) + 1
            if state.kind == PENDING:
                self._read_header(state, line[len(BOM) :] if line.startswith(BOM) else line)
                state.indexed = end
                if state.kind == OTHER:
                    break
                continue
            row = _entry_row(line, offset)
            if row is not None:
                batch.append(row)
                if row[0] is not None:
                    state.last_entry = row[0]
            state.indexed = end
            held += len(line)
            if held >= _FLUSH_BYTES:
                self._flush(state, batch, leaf_before, info, storage, finished=False)
                batch, held, leaf_before = [], 0, state.last_entry
                if self.cancelled():
                    self.stats.cancelled = True
                    break
        self.stats.bytes_read += (reader.tail_offset + len(reader.tail) if reader.done else state.indexed) - start
        self._flush(state, batch, leaf_before, info, storage, finished=not self.stats.cancelled)

    def _read_header(self, state: FileState, line: bytes) -> None:
        header, _ = _decode(line)
        if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str):
            cwd = header.get("cwd")
            state.kind, state.session_id = SESSION, scrub(header["id"])
            state.cwd = scrub(cwd) if isinstance(cwd, str) else ""
        else:
            state.kind = OTHER

    # ------------------------------------------------------------------ writing rows

    def _flush(
        self,
        state: FileState,
        batch: list[tuple[Any, ...]],
        leaf_before: str | None,
        info: Stat,
        storage: Readable,
        finished: bool,
    ) -> None:
        """Write a batch of rows and, in the same transaction, the marks of the leaf's path and
        how far the file is now indexed."""
        first = self._next_rowid
        self._next_rowid += len(batch)
        file_id = state.file_id
        self.db.executemany(
            "INSERT INTO entries(rowid, file_id, entry_id, parent_id, type, role, timestamp, ts_ms, offset, length)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(first + n, file_id, *row[:-1]) for n, row in enumerate(batch)],
        )
        self.db.executemany(
            "INSERT INTO fts(rowid, text, meta) VALUES (?, ?, ?)",
            [
                (first + n, row[-1], meta_text(file_id, state.cwd, row[3], row[2]))
                for n, row in enumerate(batch)
                if row[-1]
            ],
        )
        new_ids = [row[0] for row in batch if row[0] is not None]
        follow_leaf(self.db, file_id, leaf_before, state.last_entry, first, new_ids)
        self._save_state(state, info, storage, finished)
        self.stats.entries_added += len(batch)
        self._uncommitted += sum(row[-2] for row in batch)
        if self._uncommitted >= _COMMIT_BYTES:
            self._commit()
            self._begin()

    def _save_state(self, state: FileState, info: Stat, storage: Readable, finished: bool = True) -> None:
        """Record what was read. A file left before its end (a batch, a cancel) is recorded as
        only as long as what was indexed, so the next refresh goes on from there."""
        size = info.st_size if finished else state.indexed
        state.device, state.inode, state.size, state.mtime_ns = info.st_dev, info.st_ino, size, info.st_mtime_ns
        state.head, state.tail = window_hashes(storage.read, state.indexed)
        self.db.execute(
            "UPDATE files SET kind = ?, session_id = ?, cwd = ?, device = ?, inode = ?, size = ?, mtime_ns = ?,"
            " indexed = ?, head = ?, tail = ?, last_entry = ? WHERE file_id = ?",
            (
                state.kind,
                state.session_id,
                state.cwd,
                state.device,
                state.inode,
                state.size,
                state.mtime_ns,
                state.indexed,
                state.head,
                state.tail,
                state.last_entry,
                state.file_id,
            ),
        )

    def _restart(self, path: str, state: FileState | None, info: Stat) -> FileState:
        """A file to read from the start: its old rows go, its state starts empty."""
        if state is None:
            cursor = self.db.execute(
                "INSERT INTO files(path, kind, device, inode, size, mtime_ns, indexed, head, tail)"
                " VALUES (?, 0, 0, 0, -1, 0, 0, x'', x'')",
                (path,),
            )
            file_id = cursor.lastrowid
            assert file_id is not None
        else:
            file_id = state.file_id
            self._forget(file_id, delete_file=False)
        return FileState(file_id, PENDING, None, None, info.st_dev, info.st_ino, -1, 0, 0, b"", b"", None)

    def _forget(self, file_id: int, delete_file: bool) -> None:
        self.db.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM entries WHERE file_id = ?)", (file_id,))
        self.db.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))
        if delete_file:
            self.db.execute("DELETE FROM files WHERE file_id = ?", (file_id,))

    def _drop_path(self, path: str) -> None:
        self._begin()
        state = _load_state(self.db, path)
        if state is not None:
            self._forget(state.file_id, delete_file=True)
            self.stats.files_removed += 1

    # ------------------------------------------------------------------ transactions

    def _begin(self) -> None:
        """Take the write lock (other daemons wait) and learn the next free row id under it."""
        if self.db.in_transaction:
            return
        self.db.execute("BEGIN IMMEDIATE")
        row = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
        self._next_rowid = (row[0] if row else 0) + 1

    def _commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self._uncommitted = 0


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unchanged_by_name(path: Path, state: FileState) -> bool:
    """The cheap check first: a stat of the name, no open. A file with a second name is opened,
    so that it is refused and dropped as the daemon refuses it."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and state.same_stat(info)


def _decode(line: bytes) -> tuple[Any, bool]:
    """A line's JSON value (None when it is not JSON), and whether it took the lenient path: only
    there can strings hold lone surrogates (JavaScript writes half an emoji as `\\ud83d`), which
    SQLite cannot store as text."""
    try:
        return orjson.loads(line), False
    except orjson.JSONDecodeError:
        pass
    try:
        return jsonfmt.loads(line), True
    except (jsonfmt.JSONDecodeError, RecursionError):
        return None, False


def _entry_row(line: bytes, offset: int) -> tuple[Any, ...] | None:
    """(entry id, parent id, type, role, timestamp, ms, offset, length, text) of an entry line;
    None for a line that is not a JSON object, or is another header."""
    fields, lenient = _decode(line)
    if not isinstance(fields, dict) or fields.get("type") == "session":
        return None
    get = fields.get
    stamp = _str(get("timestamp"))
    role, text = role_and_text(fields)
    row = (
        _str(get("id")),
        _str(get("parentId")),
        _str(get("type")),
        role,
        stamp,
        _ms(stamp, fields),
        offset,
        len(line),
        text,
    )
    return tuple(scrub(value) for value in row) if lenient else row


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ms(stamp: str | None, fields: dict[str, Any]) -> int | None:
    """The entry's time in Unix ms; a message's own numeric timestamp when the entry has none."""
    ms = iso_to_ms(stamp)
    if ms is not None:
        return ms
    message = fields.get("message")
    value = message.get("timestamp") if isinstance(message, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and abs(value) < _MAX_MS:
        return int(value)
    return None


def _raise_if_exhausted(path: Path, exc: BaseException) -> None:
    """Out of descriptors or memory is the daemon's trouble, not the file's: an error, not a gap."""
    if isinstance(exc, OSError) and exc.errno in _EXHAUSTED:
        raise StorageError(f"could not read {path}: {exc.strerror or exc}", path=str(path)) from None
