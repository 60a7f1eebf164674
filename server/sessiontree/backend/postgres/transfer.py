"""JSONL in and out of the store: `sessiontree push` and `sessiontree pull`.

A push copies a session file into the store under its path below the sessions root (a file from
elsewhere goes where pi would keep it: `--<cwd>--/<file name>`). Pushing again is harmless: a file
that only grew since adds the new bytes, an unchanged one adds nothing, and a file that went its
own way adds the entries (by id) the store does not have. A pull writes a session back as the very
bytes the store holds, made under a temporary name and linked into place; a file that is a prefix
of the stored bytes is extended, and one that differs is left alone and reported.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal

import attrs

from ...errors import FileNotFound, NotASessionFile, SessionTreeError, StorageError
from ...listing import Summary
from ...paths import encode_cwd
from ...store import FileStorage, confined
from ..files import FileBackend
from . import names
from .backend import PostgresBackend
from .database import Connection
from .schema import CHANNEL
from .storage import entry_id_of, unfinished_line
from .writes import add_lines, header_of, insert_session, whole_lines

_READ = 1024 * 1024
Outcome = Literal["created", "appended", "merged", "unchanged", "differs", "failed"]


@attrs.frozen
class Moved:
    """What became of one session: its name in the store, the outcome, and how many bytes (or, for
    a merge, entries) were added."""

    name: str
    outcome: Outcome
    added: int = 0
    message: str = ""


def _opened(path: Path) -> BinaryIO:
    """The file to read, checked on its descriptor to be a regular file: opening a FIFO (or a
    device) by name would wait for a writer for good."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotASessionFile(f"{path} is not a regular file", path=str(path))
    return open(fd, "rb")


def _chunks(path: Path, start: int = 0) -> Iterator[bytes]:
    with _opened(path) as source:
        source.seek(start)
        while chunk := source.read(_READ):
            yield chunk


def store_name(backend: PostgresBackend, path: Path) -> str:
    """The name a file gets: its path below the sessions root, else pi's place for its header's cwd."""
    resolved = path.resolve()
    if backend.root in resolved.parents:
        return _pushable(backend.name_of(resolved), path, "its path below the sessions root")
    for line in whole_lines(_chunks(path)):
        header = header_of(line.rstrip(b"\r\n"))
        if header is not None:
            cwd = header.get("cwd")
            name = f"{encode_cwd(cwd if isinstance(cwd, str) else '')}/{path.name}"
            return _pushable(name, path, "its header's cwd")
    raise NotASessionFile(f"{path} holds no session header", path=str(path))


def _pushable(name: str, path: Path, source: str) -> str:
    """`name` if it is a path below the root; else the error a push reports for this file alone,
    with the rule a pull applies to the store's names (names.py)."""
    reason = names.problem(name)
    if reason is not None:
        raise StorageError(
            f"{source} gives the name {names.shown(name)}, which is not a path below the sessions root"
            f" ({reason}); the file is not pushed",
            storeName=names.shown(name),
        )
    return name


def session_files(paths: Iterable[Path]) -> list[Path]:
    """The files named, and the `.jsonl` files below the directories named."""
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()) if path.is_dir() else [path])
    return found


# ---------------------------------------------------------------------- push


def push(backend: PostgresBackend, path: Path) -> Moved:
    try:
        name = store_name(backend, path)
    except (OSError, SessionTreeError) as exc:
        return Moved(str(path), "failed", message=_reason(exc))
    try:
        return _push(backend, path, name)
    except (OSError, SessionTreeError) as exc:
        return Moved(name, "failed", message=_reason(exc))
    except UnicodeEncodeError:  # text the server's encoding cannot hold; the transaction rolled back
        return Moved(name, "failed", message="it holds text the store cannot encode (a lone surrogate?); not pushed")


def _push(backend: PostgresBackend, path: Path, name: str) -> Moved:
    connection = backend.connection()
    with backend.db.errors(), connection.transaction():
        row = connection.execute(
            "SELECT sid, size, header, message_count, first_message, title, last_activity"
            " FROM sessiontree.sessions WHERE name = %s FOR UPDATE",
            (name,),
        ).fetchone()
        if row is None:
            _, _, size = insert_session(connection, name, whole_lines(_chunks(path)))
            return Moved(name, "created", size)
        sid, stored, header, *state = row
        summary = Summary(header_of(bytes(header)) or {}, *state)
        file_size = path.stat().st_size
        if file_size >= stored and _same_start(connection, sid, path, stored):
            if file_size == stored:
                return Moved(name, "unchanged")
            _continue(connection, sid, stored, summary, path)
            outcome: Moved = Moved(name, "appended", file_size - stored)
        else:
            added = _merge(connection, sid, stored, summary, path)
            outcome = Moved(name, "merged" if added else "unchanged", added)
        connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(sid)))
    return outcome


def _stored_chunks(connection: Connection, sid: int) -> Iterator[bytes]:
    with connection.cursor(name="sessiontree_pull") as cursor:  # server-side: a big session is not held whole
        cursor.itersize = 2000
        cursor.execute("SELECT data FROM sessiontree.lines WHERE sid = %s ORDER BY off", (sid,))
        for (data,) in cursor:
            yield bytes(data)


def _same_start(connection: Connection, sid: int, path: Path, length: int) -> bool:
    """Whether the file's first `length` bytes are the stored ones."""
    with _opened(path) as source:
        for piece in _stored_chunks(connection, sid):
            if source.read(len(piece)) != piece:
                return False
    return True


def _continue(connection: Connection, sid: int, stored: int, summary: Summary, path: Path) -> None:
    """The file grew: its new bytes are added. A line the store holds unfinished is completed by them
    (and now counts in the summary)."""
    unfinished = unfinished_line(connection, sid)
    lines = whole_lines(_chunks(path, stored))
    first = next(lines, b"")
    completed = unfinished and first.endswith(b"\n")
    if completed:
        summary.add((unfinished + first)[:-1])
    add_lines(connection, sid, stored, summary, [first, *lines], skip=1 if unfinished else 0)
    if completed:  # the whole line's id, on the row that completes it: a lookup by id (a merge) finds it
        connection.execute(
            "UPDATE sessiontree.lines SET entry_id = %s WHERE sid = %s AND off = %s",
            (entry_id_of(unfinished + first), sid, stored),
        )


def _stored_ids(connection: Connection, sid: int) -> set[str]:
    """The ids of the session's entries. A line split over rows (a torn line a later push
    completed) may have its id on none of them: those rows are joined and read again."""
    known = {
        str(entry_id)
        for (entry_id,) in connection.execute(
            "SELECT entry_id FROM sessiontree.lines WHERE sid = %s AND entry_id IS NOT NULL", (sid,)
        )
    }
    carry, end = b"", -1
    rows = connection.execute(
        "SELECT off, data FROM sessiontree.lines WHERE sid = %s AND entry_id IS NULL ORDER BY off", (sid,)
    )
    for off, data in rows:
        if off != end:  # not the rest of the line before
            carry = b""
        carry += bytes(data)
        end = off + len(data)
        if carry.endswith(b"\n"):
            if (entry_id := entry_id_of(carry)) is not None:
                known.add(entry_id)
            carry = b""
    return known


def _merge(connection: Connection, sid: int, stored: int, summary: Summary, path: Path) -> int:
    """The file and the store went their own ways: the file's entries the store lacks are added, in
    the file's order, on fresh lines, each id once. Returns how many."""
    known = _stored_ids(connection, sid)
    missing = []
    for line in whole_lines(_chunks(path)):
        entry_id = entry_id_of(line)
        if entry_id is None or entry_id in known or header_of(line) is not None:
            continue
        known.add(entry_id)  # a file holding an id twice adds it once
        missing.append(line if line.endswith(b"\n") else line + b"\n")
    if not missing:
        return 0
    fence = [b"\n"] if unfinished_line(connection, sid) else []
    add_lines(connection, sid, stored, summary, [*fence, *missing], skip=len(fence))
    return len(missing)


# ---------------------------------------------------------------------- pull


def stored_names(backend: PostgresBackend, wanted: list[str]) -> list[str]:
    """The names asked for (paths below the root, or names), or every session in the store."""
    if wanted:
        return [backend.name_of(name) for name in wanted]
    with backend.db.errors():
        rows = backend.connection().execute("SELECT name FROM sessiontree.sessions ORDER BY name").fetchall()
    return [str(name) for (name,) in rows]


def pull(backend: PostgresBackend, name: str, files: FileBackend) -> Moved:
    """One session written back; a name that is no path below the root fails alone."""
    try:
        return _pull(backend, names.checked(name), files)
    except (OSError, SessionTreeError) as exc:
        return Moved(names.shown(name), "failed", message=_reason(exc))


def _pull(backend: PostgresBackend, name: str, files: FileBackend) -> Moved:
    connection = backend.connection()
    target = files.root / name
    with backend.db.errors(), connection.transaction():
        row = connection.execute("SELECT sid, size FROM sessiontree.sessions WHERE name = %s", (name,)).fetchone()
        if row is None:
            return Moved(name, "failed", message="no such session in the store")
        sid, size = row
        try:
            fd = confined.open_file(files.root, target, os.O_RDWR | os.O_APPEND)
        except FileNotFound:
            files.create(target.parent, target.name, _stored_chunks(connection, sid))[0].close()
            return Moved(name, "created", size)
        storage = FileStorage(target, fd=fd)
        try:
            with storage.lock():
                return _extend(connection, sid, size, storage, name)
        finally:
            storage.close()


def _extend(connection: Connection, sid: int, size: int, storage: FileStorage, name: str) -> Moved:
    """An existing file: left as it is if it holds the stored bytes, extended if it holds their start."""
    have = storage.size()
    if have > size:
        return Moved(name, "differs", message=f"the file is longer than the stored session ({have} > {size} bytes)")
    read = 0
    tail: list[bytes] = []
    for piece in _stored_chunks(connection, sid):
        if read >= have:
            tail.append(piece)
        elif read + len(piece) > have:  # the file ends inside this piece
            if storage.read(read, have - read) != piece[: have - read]:
                return Moved(name, "differs", message="the file and the stored session differ")
            tail.append(piece[have - read :])
        elif storage.read(read, len(piece)) != piece:
            return Moved(name, "differs", message="the file and the stored session differ")
        read += len(piece)
    if not tail:
        return Moved(name, "unchanged")
    data = b"".join(tail)
    if storage.append(data) != have:
        raise StorageError("another program appended to the file meanwhile; pull it again", path=storage.name)
    return Moved(name, "appended", len(data))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SessionTreeError):
        return exc.message
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
