"""The bytes of one session file, behind a small interface.

`FileStorage` is the real file; `MemoryStorage` keeps the bytes in memory so the
store can be tested (and fault-injected) without a disk. Both promise the same
things: `append` writes all of its bytes or none, and `lock` excludes every other
writer that also locks (other sessiontree daemons; pi itself takes no lock).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Protocol

Durability = Literal["os", "fsync"]


class Storage(Protocol):
    """What the store needs from a file."""

    name: str

    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...

    def append(self, data: bytes, size: int | None = None) -> None:
        """Write `data` at the end in one write: afterwards the file holds all of it or none.
        `size`: the file's size now, when the caller knows it (it holds the lock)."""

    def truncate(self, size: int) -> None: ...

    def lock(self) -> contextlib.AbstractContextManager[None]: ...

    def sync(self) -> None: ...

    def quarantine(self, offset: int, data: bytes) -> str:
        """Keep damaged bytes beside the file; returns where they went."""

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

    __slots__ = ("fd", "depth")

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
    """A session file opened for appending, locked with flock (released if the process dies)."""

    def __init__(self, path: Path, durability: Durability = "os", writable: bool = True) -> None:
        self.path = path
        self.name = str(path)
        self.durability = durability
        flags = os.O_RDWR | os.O_APPEND if writable else os.O_RDONLY
        self._fd = os.open(path, flags | os.O_CLOEXEC)
        self._lock = _FileLock(self._fd)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def stat(self) -> os.stat_result:
        return os.fstat(self._fd)

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._fd, length, offset)

    def append(self, data: bytes, size: int | None = None) -> None:
        before = self.size() if size is None else size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes")
            if self.durability == "fsync":
                os.fsync(self._fd)
        except OSError:
            self._cut_back(before)
            raise

    def _cut_back(self, size: int) -> None:
        """After a failed write, remove whatever part of it reached the file."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, size)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        if self.durability == "fsync":
            os.fsync(self._fd)

    def lock(self) -> _FileLock:
        return self._lock

    def sync(self) -> None:
        os.fsync(self._fd)

    def quarantine(self, offset: int, data: bytes) -> str:
        target = self.path.with_name(f"{self.path.name}.torn-{offset}")
        with open(target, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return str(target)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class MemoryStorage:
    """The same contract over a bytearray, for tests and fault injection."""

    def __init__(self, data: bytes = b"", name: str = "memory.jsonl") -> None:
        self.name = name
        self.data = bytearray(data)
        self.quarantined: dict[int, bytes] = {}
        self.locked = False

    def size(self) -> int:
        return len(self.data)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self.data[offset : offset + length])

    def append(self, data: bytes, size: int | None = None) -> None:
        self.data += data

    def truncate(self, size: int) -> None:
        del self.data[size:]

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        was_locked, self.locked = self.locked, True
        try:
            yield
        finally:
            self.locked = was_locked

    def sync(self) -> None:
        pass

    def quarantine(self, offset: int, data: bytes) -> str:
        self.quarantined[offset] = data
        return f"{self.name}.torn-{offset}"

    def close(self) -> None:
        pass
