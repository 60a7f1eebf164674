"""One session in PostgreSQL, read and written as the JSONL file it stands for.

The store's `Session` works on byte offsets in a file; here the file is the session's rows in
`sessiontree.lines`, each a piece of the file at its offset. Rows are only ever added, so bytes
once read never change: they are kept in a small cache of blocks. `lock()` is a transaction that
holds the session's row `FOR UPDATE`, which serialises appends across every daemon on the
database; `append` adds the rows, updates the summary, notifies, and commits before it returns.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec
import psycopg

from ...listing import Summary
from .database import Connection, Database
from .schema import CHANNEL

READ_AHEAD: Final = 256 * 1024  # a short read fetches this much: the entries of a path lie close together
CACHE_BYTES: Final = 32 * 1024 * 1024

_LOCK_ROW = (
    "SELECT size, name, message_count, first_message, title, last_activity FROM sessiontree.sessions"
    " WHERE sid = %d FOR UPDATE"
)
_READ = (
    "SELECT off, data FROM sessiontree.lines WHERE sid = %(sid)s AND off < %(stop)s AND off >= "
    "(SELECT coalesce(max(off), 0) FROM sessiontree.lines WHERE sid = %(sid)s AND off <= %(start)s) ORDER BY off"
)
# One statement: the rows, the session's size and summary, the notification (sent on commit).
_APPEND = (
    "WITH added AS (INSERT INTO sessiontree.lines (sid, off, entry_id, data)"
    " SELECT %(sid)s, * FROM unnest(%(offsets)s::bigint[], %(ids)s::text[], %(data)s::bytea[])),"
    " summary AS (UPDATE sessiontree.sessions SET size = %(size)s, updated = now(), message_count = %(count)s,"
    " first_message = %(first)s, title = %(title)s, last_activity = %(last)s WHERE sid = %(sid)s)"
    " SELECT pg_notify(%(channel)s, %(sid)s::text)"
)

_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")  # in a JSON string, but not in a PostgreSQL text value


def storable(text: str | None) -> str | None:
    """A summary's text as a text column can hold it: NUL and lone surrogates become U+FFFD."""
    return None if text is None else _NOT_TEXT.sub("\ufffd", text)


class _Id(msgspec.Struct):
    id: Any = None


_decode_id = msgspec.json.Decoder(_Id).decode


def entry_id_of(line: bytes) -> str | None:
    """The id of a line that is an entry (or the header), for lookups by id; None for any other line."""
    try:
        found = _decode_id(line).id
    except (msgspec.MsgspecError, RecursionError):
        return None
    return found if isinstance(found, str) else None


def pieces(data: bytes, start: int) -> Iterator[tuple[int, bytes]]:
    """`data`, written at `start`, cut after each line end: (offset, piece)."""
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        stop = len(data) if end < 0 else end + 1
        yield start + at, data[at:stop]
        at = stop


def unfinished_line(connection: Connection, sid: int) -> bytes:
    """The session's last row when it has no line end yet (a torn line), else b""."""
    row = connection.execute(
        "SELECT data FROM sessiontree.lines WHERE sid = %s ORDER BY off DESC LIMIT 1", (sid,)
    ).fetchone()
    last = b"" if row is None else bytes(row[0])
    return b"" if last.endswith(b"\n") else last


class BlockCache:
    """Blocks of a session's bytes by where they start, found by bisection; the oldest go first
    when more than `limit` bytes are kept. Bytes never change once written, so nothing goes stale."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._starts: list[int] = []  # sorted
        self._blocks: dict[int, bytes] = {}  # in the order they came
        self._size = 0

    def get(self, offset: int, length: int) -> bytes | None:
        at = bisect.bisect_right(self._starts, offset) - 1
        if at < 0:
            return None
        start = self._starts[at]
        block = self._blocks[start]
        if offset + length > start + len(block):
            return None
        return block[offset - start : offset - start + length]

    def put(self, start: int, block: bytes) -> None:
        if start in self._blocks:
            self._size -= len(self._blocks.pop(start))
        else:
            bisect.insort(self._starts, start)
        self._blocks[start] = block
        self._size += len(block)
        while self._size > self.limit and len(self._blocks) > 1:
            oldest = next(iter(self._blocks))
            self._size -= len(self._blocks.pop(oldest))
            self._starts.remove(oldest)

    def clear(self) -> None:
        self._starts.clear()
        self._blocks.clear()
        self._size = 0


class _RowLock:
    """Re-entrant: the outermost holder's transaction is the lock."""

    __slots__ = ("depth", "storage")

    def __init__(self, storage: PostgresStorage) -> None:
        self.storage, self.depth = storage, 0

    def __enter__(self) -> None:
        if self.depth == 0:
            self.storage.begin()
        self.depth += 1

    def __exit__(self, kind: object, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.storage.db.end_transaction(commit=kind is None)


class PostgresStorage:
    """The `Storage` of one session row (`sid`, named `store_name`), shown by its path under the
    sessions root. A row renamed (a migration) or deleted since counts as replaced."""

    def __init__(self, db: Database, sid: int, store_name: str, path: Path, header: dict[str, Any]) -> None:
        self.db = db
        self.sid = sid
        self.store_name = store_name
        self.path = path
        self.name = str(path)
        self.header = header
        self._size = 0
        self._gone = False
        self._lock = _RowLock(self)
        self._summary: Summary | None = None  # as the locked row has it
        self._cache = BlockCache(CACHE_BYTES)

    # ------------------------------------------------------------------ size and identity

    def size(self) -> int:
        if self._lock.depth:  # the locked row's, kept by our own appends
            return self._size
        with self.db.errors():
            row = self.db.connection().execute(
                "SELECT size, name FROM sessiontree.sessions WHERE sid = %s", (self.sid,)
            ).fetchone()
        if row is None or row[1] != self.store_name:
            self._gone = True
        else:
            self._size = int(row[0])
        return self._size

    def replaced(self) -> bool:
        """The session's row was deleted (or replaced by a migration) since it was opened."""
        return self._gone

    # ------------------------------------------------------------------ locking and appending

    def lock(self) -> _RowLock:
        return self._lock

    def begin(self) -> None:
        """BEGIN and lock the row in one round trip: with no parameters psycopg sends the simple
        query protocol, which takes two statements (the sid is an integer)."""
        with self.db.errors():
            cursor = self.db.connection().execute(f"BEGIN; {_LOCK_ROW % int(self.sid)}")
            cursor.nextset()  # past BEGIN's result to the row's
            row = cursor.fetchone()
        if row is None or row[1] != self.store_name:
            self._gone = True
            self._summary = None
            return
        size, _, count, first, title, last = row
        self._size = int(size)
        self._summary = Summary(self.header, int(count), str(first), title, last)

    def append(self, data: bytes) -> int:
        """Add `data` at the end as rows and commit (the lock's transaction ends here; without the
        lock, in a transaction of its own)."""
        if not self._lock.depth:
            with self._lock:
                return self.append(data)
        summary = self._summary
        if summary is None:
            raise OSError(errno.ENOENT, "the session is no longer in the store")
        start = self._size
        rows = list(pieces(data, start))
        if rows and rows[0][1] == b"\n" and start:  # a fence: it ends the last line, which now counts
            with self.db.errors():
                summary.add(unfinished_line(self.db.connection(), self.sid))
        for _, piece in rows:
            if piece.endswith(b"\n") and len(piece) > 1:
                summary.add(piece[:-1])
        params = {
            "sid": self.sid,
            "offsets": [offset for offset, _ in rows],
            "ids": [entry_id_of(piece) for _, piece in rows],
            "data": [piece for _, piece in rows],
            "size": start + len(data),
            "count": summary.message_count,
            "first": storable(summary.first_message),
            "title": storable(summary.name),
            "last": summary.last_activity,
            "channel": CHANNEL,
        }
        with self.db.errors(), psycopg.ClientCursor(self.db.connection()) as cursor:
            cursor.execute(_APPEND + "; COMMIT", params)  # bound here, so both go in one round trip
        self._size = start + len(data)
        return start


    def sync(self) -> None:
        pass  # an append is committed (and on the server's disk) before it returns

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        found = self._cache.get(offset, length)
        if found is not None:
            return found
        start, block = self._fetch(offset, offset + max(length, READ_AHEAD))
        return block[offset - start : offset - start + length]

    def _fetch(self, start: int, stop: int) -> tuple[int, bytes]:
        """The rows from the one holding `start` to `stop`, joined; binary, so bytea is not hex-decoded."""
        with self.db.errors(), self.db.connection().cursor(binary=True) as cursor:
            rows = cursor.execute(_READ, {"sid": self.sid, "start": start, "stop": stop}).fetchall()
        if not rows:
            return start, b""
        first = int(rows[0][0])
        block = b"".join([data for _, data in rows])
        self._cache.put(first, block)
        return first, block

    def close(self) -> None:
        self._cache.clear()
        with contextlib.suppress(Exception):
            if self._lock.depth:
                self.db.end_transaction(commit=False)
