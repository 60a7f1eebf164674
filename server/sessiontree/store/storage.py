"""The bytes of one session file, behind a small interface.

`FileStorage` is the real file; `MemoryStorage` keeps the bytes in memory so the
store can be tested (and fault-injected) without a disk. Both promise the same
things: `append` writes its bytes in one write and says where they landed, and `lock`
excludes every other writer that also locks (other sessiontree daemons; pi itself takes
no lock, so bytes may land anywhere between two of our reads and writes).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, Protocol

Durability = Literal["os", "fsync"]


class Storage(Protocol):
    """What the store needs from a file."""

    name: str

    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...

    def append(self, data: bytes) -> int:
        """Write `data` at the end in one write and return the offset it starts at: other
        processes may have appended before it. A failed write may leave a prefix of `data`
        (a torn line, fenced by the next append); it is never cut back, since bytes another
        writer appended after it would go too."""

    def replaced(self) -> bool:
        """True when the file's name no longer leads to the file this storage has open."""

    def lock(self) -> contextlib.AbstractContextManager[None]: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


def fsync_directory(path: Path) -> None:
    """Make a create or rename in `path` survive power loss."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _FileLock:
    """An exclusive flock, re-entrant within this process (flock on the same descriptor would not
    block anyway). A plain class, not a generator: it is taken on every append."""

    __slots__ = ("depth", "fd")

    def __init__(self, fd: int) -> None:
        self.fd, self.depth = fd, 0

    def __enter__(self) -> None:
        if self.depth == 0:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            fcntl.flock(self.fd, fcntl.LOCK_UN)


class FileStorage:
    """A session file opened for appending, locked with flock (released if the process dies).

    `fd`: a descriptor already opened and checked (see `confined`); without it, `path` is opened."""

    def __init__(self, path: Path, durability: Durability = "os", writable: bool = True, fd: int | None = None) -> None:
        self.path = path
        self.name = str(path)
        self.durability = durability
        if fd is None:
            fd = os.open(path, (os.O_RDWR | os.O_APPEND if writable else os.O_RDONLY) | os.O_CLOEXEC)
        self._fd = fd
        info = os.fstat(fd)
        self._identity = (info.st_dev, info.st_ino)
        self._lock = _FileLock(self._fd)

    @property
    def fd(self) -> int:
        """The open descriptor (a scan worker reads through it, never through the path)."""
        return self._fd

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def stat(self) -> os.stat_result:
        return os.fstat(self._fd)

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._fd, length, offset)

    def append(self, data: bytes) -> int:
        written = os.write(self._fd, data)
        # O_APPEND moved the position to the end of what was written, wherever that landed.
        start = os.lseek(self._fd, 0, os.SEEK_CUR) - written
        if written != len(data):
            raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes")
        if self.durability == "fsync":
            os.fsync(self._fd)
        return start

    def replaced(self) -> bool:
        try:
            info = os.lstat(self.path)
        except OSError:
            return True
        return (info.st_dev, info.st_ino) != self._identity

    def lock(self) -> _FileLock:
        return self._lock

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class MemoryStorage:
    """The same contract over a bytearray, for tests and fault injection.

    `before_append`, when set, runs just before each append: another writer's bytes landing in
    the gap between a refresh and the write."""

    def __init__(self, data: bytes = b"", name: str = "memory.jsonl") -> None:
        self.name = name
        self.data = bytearray(data)
        self.locked = False
        self.is_replaced = False
        self.before_append: Callable[[MemoryStorage], None] | None = None

    def size(self) -> int:
        return len(self.data)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self.data[offset : offset + length])

    def append(self, data: bytes) -> int:
        if self.before_append is not None:
            self.before_append(self)
        start = len(self.data)
        self.data += data
        return start

    def replaced(self) -> bool:
        return self.is_replaced

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        was_locked, self.locked = self.locked, True
        try:
            yield
        finally:
            self.locked = was_locked

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass
