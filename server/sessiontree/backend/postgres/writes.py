"""Whole sessions into the store: the rows of a new session, or what a push adds to one."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath
from typing import Any

from ... import jsonfmt
from ...errors import NotASessionFile, SessionExists
from ...listing import Summary
from ...store.lines import BOM
from .database import Connection
from .storage import entry_id_of, pieces, storable

_COPY = "COPY sessiontree.lines (sid, off, entry_id, data) FROM STDIN (FORMAT BINARY)"
_BATCH = 4 * 1024 * 1024  # bytes of lines copied in one COPY


def directory_of(name: str) -> str:
    return str(PurePosixPath(name).parent)


def whole_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of `chunks` with their line ends (a last one may have none)."""
    carry = b""
    for chunk in chunks:
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield from (piece for _, piece in pieces(data[:cut], 0))
        carry = data[cut:]
    if carry:
        yield carry


def header_of(line: bytes) -> dict[str, Any] | None:
    """A session header line's object (a BOM before it allowed), or None."""
    try:
        value = jsonfmt.loads(line[len(BOM) :] if line.startswith(BOM) else line)
    except jsonfmt.JSONDecodeError:
        return None
    if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
        return value
    return None


def _header_or_refuse(line: bytes, name: str) -> dict[str, Any] | None:
    """The header, None for a line a scan skips (blank, not JSON), and NotASessionFile for any other
    first value: the file store would not open the session either."""
    header = header_of(line)
    if header is not None or not line.strip():
        return header
    try:
        jsonfmt.loads(line[len(BOM) :] if line.startswith(BOM) else line)
    except jsonfmt.JSONDecodeError:
        return None
    raise NotASessionFile("the first line is not a session header", path=name)


def insert_session(connection: Connection, name: str, lines: Iterable[bytes]) -> tuple[int, dict[str, Any], int]:
    """A new session row and its lines, in the caller's transaction: (sid, header, size). The name
    must be free (SessionExists) and the lines must hold a session header (NotASessionFile)."""
    taken = connection.execute("SELECT 1 FROM sessiontree.sessions WHERE name = %s", (name,)).fetchone()
    if taken is not None:
        raise SessionExists(f"the store already has a session named {name}", path=name)
    buffered: list[bytes] = []
    header: dict[str, Any] | None = None
    feed = iter(lines)
    for line in feed:  # blank or broken lines before the header are kept too, in their place
        buffered.append(line)
        header = _header_or_refuse(line.rstrip(b"\r\n"), name)
        if header is not None:
            break
    if header is None:
        raise NotASessionFile("it holds no session header", path=name)
    row = connection.execute(
        "INSERT INTO sessiontree.sessions (name, directory, header, size) VALUES (%s, %s, %s, 0) RETURNING sid",
        (name, directory_of(name), jsonfmt.dumps(header)),
    ).fetchone()
    assert row is not None
    sid = int(row[0])
    summary = Summary(header)
    size = add_lines(connection, sid, 0, summary, itertools.chain(buffered, feed), skip=len(buffered))
    return sid, header, size


def add_lines(connection: Connection, sid: int, start: int, summary: Summary, lines: Iterable[bytes], skip: int = 0) -> int:
    """Copy lines into the session at `start` and bring its row up to date (the first `skip` lines,
    up to the header, are not summarised); returns the new size."""
    end, number = start, 0
    for batch in _batches(lines):  # each read before its COPY: they may come from this connection (a fork)
        with connection.cursor() as cursor, cursor.copy(_COPY) as copy:
            copy.set_types(["int8", "int8", "text", "bytea"])
            for line in batch:
                copy.write_row((sid, end, entry_id_of(line), line))
                end += len(line)
                if number >= skip and line.endswith(b"\n") and len(line) > 1:
                    summary.add(line[:-1])
                number += 1
    connection.execute(
        "UPDATE sessiontree.sessions SET size = %s, updated = now(), message_count = %s, first_message = %s,"
        " title = %s, last_activity = %s WHERE sid = %s",
        (end, summary.message_count, storable(summary.first_message), storable(summary.name), summary.last_activity, sid),
    )
    return end


def _batches(lines: Iterable[bytes]) -> Iterator[list[bytes]]:
    """The lines in lists of about _BATCH bytes."""
    batch: list[bytes] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= _BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
