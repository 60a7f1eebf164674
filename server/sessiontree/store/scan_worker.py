"""A second process for the first scan of a big file: it decodes the file's later part while the
daemon scans the earlier one, so a cold open uses two cores.

Decoding every line is most of a cold open, and one interpreter cannot do it on two cores. The
worker is a fork of the daemon (nothing to start or import): it maps the session through the
descriptor the daemon already opened and checked (never a path) and only reads it, takes whole lines
from `start` on in blocks, and hands over each block's index columns (`packed_columns`) as soon as
they are decoded.
It stops at the first line that is not an entry in pi's usual shape (blank, torn, a second header,
odd field types) and says where: the daemon takes in that line, and all after it, itself, exactly
as a scan alone does. If the worker cannot start, dies, falls silent or finds the file cut short,
the daemon scans the rest itself; what arrived whole is kept.

Handing over: each packed block is written to a memory file (so the worker never waits for the
daemon, which is busy with its own part), then a notice on a pipe: `B` and the 8-byte offset in
the memory file where that block ends; the last notice is `S` and the 8-byte file offset where the
worker stopped.
"""

from __future__ import annotations

import mmap
import os
import pickle
import resource
import select
import signal
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import suppress
from types import TracebackType

from ..entries import skeleton_columns, skeletons
from .lines import CHUNK, line_ends
from .packed_columns import BlockColumns, pack, unpack
from .storage import FileStorage

MIN_BYTES = 48 * 1024 * 1024  # below this the daemon's own part would be over before the worker's
SETTING = "SESSIONTREE_SCAN_WORKER"  # the bytes from which a worker is forked; "0": never
# The worker's part of the bytes to scan, by the length of a line: the daemon indexes every entry
# the worker decodes, so the more entries a megabyte holds, the more bytes the worker takes. Best
# measured (2 cores): 0.75 at ~1,350 bytes a line (100,000 entries of bench data), 0.85-0.86 at ~500.
SHARE_LONG_LINES, SHARE_SHORT_LINES = 0.75, 0.86
LONG_LINE, SHORT_LINE = 1350, 500
SHARE: float | None = None  # fixed instead, for tests
SILENCE_SECONDS = 30.0  # a worker quiet for this long is given up
_NOTICE = 9  # a kind and an 8-byte offset
_BLOCK, _STOP = b"B", b"S"


class ScanWorker:
    """The forked worker scanning `[start, end)` of one file, and the blocks it hands over."""

    def __init__(self, pid: int, notices: int, frames: int, start: int) -> None:
        self.pid = pid
        self.notices = notices  # the pipe's reading end
        self.frames = frames  # the memory file the packed blocks are written to
        self.start = start  # where the worker's part begins: just after a line end
        self.stopped_at = start  # where the whole lines the blocks received cover end
        self.failure: str | None = None  # why the blocks ended before the worker said it stopped
        self._read_to = 0
        self._waiting = select.poll()  # not `select`: the daemon may hold descriptors past 1024
        self._waiting.register(notices, select.POLLIN)

    @classmethod
    def start_for(cls, storage: object, start: int, end: int) -> ScanWorker | None:
        """A worker for the later part of `[start, end)` when that is big enough and the storage a
        local file; None to scan alone."""
        least = _least_bytes()
        if not isinstance(storage, FileStorage) or least is None or end - start < least:
            return None
        share = SHARE if SHARE is not None else _share(storage, start, end)
        split = _line_start_after(storage, start + int((end - start) * (1 - share)), end)
        if split is None or not hasattr(os, "fork"):
            return None
        try:
            frames = _memory_file()
        except OSError:
            return None
        notices, notify = os.pipe()
        try:
            with warnings.catch_warnings():
                # Python 3.12 warns when a process with threads forks: the child runs only the
                # scan below (no lock, no import, no I/O but its own descriptors) and `_exit`s.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:
            for fd in (frames, notices, notify):
                os.close(fd)
            return None
        if pid == 0:  # the worker
            _run(storage, split, end, frames, notify)
        os.close(notify)
        return cls(pid, notices, frames, split)

    def blocks(self) -> Iterator[BlockColumns]:
        """The blocks, in file order, until the worker says where it stopped (`stopped_at`)."""
        while True:
            notice = self._read(_NOTICE)
            if notice is None:
                return
            value = int.from_bytes(notice[1:], "big")
            if notice[:1] == _STOP:
                self.stopped_at = value
                return
            try:
                block = unpack(_pread_all(self.frames, self._read_to, value - self._read_to))
            except (EOFError, ValueError, TypeError, pickle.UnpicklingError) as exc:  # never, unless a bug
                self.failure = f"a block could not be read: {exc}"
                return
            self._read_to = value
            yield block
            self.stopped_at = block.end

    def _read(self, size: int) -> bytes | None:
        parts, wanted = [], size
        while wanted:
            if not self._waiting.poll(SILENCE_SECONDS * 1000):
                self.failure = f"no word for {SILENCE_SECONDS:.0f} s"
                return None
            part = os.read(self.notices, wanted)
            if not part:
                self.failure = "it ended without saying where it stopped"
                return None
            parts.append(part)
            wanted -= len(part)
        return b"".join(parts)

    def __enter__(self) -> ScanWorker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # done or given up: nothing it could still send is wanted
        with suppress(ChildProcessError):  # reaped by someone else
            os.waitpid(self.pid, 0)
        os.close(self.notices)
        os.close(self.frames)


def _share(storage: FileStorage, start: int, end: int) -> float:
    """The worker's part, from the lines in a megabyte of the middle of `[start, end)`."""
    sample = storage.read(start + (end - start) // 2, min(1024 * 1024, end - start))
    line = len(sample) / max(1, sample.count(b"\n"))
    between = (LONG_LINE - line) / (LONG_LINE - SHORT_LINE)
    return SHARE_LONG_LINES + (SHARE_SHORT_LINES - SHARE_LONG_LINES) * min(1.0, max(0.0, between))


def _least_bytes() -> int | None:
    """The bytes to scan from which a worker is forked (None: never), as `SETTING` says."""
    value = os.environ.get(SETTING, "").strip()
    if not value:
        return MIN_BYTES
    try:
        least = int(value)
    except ValueError:
        return MIN_BYTES  # a setting that means nothing changes nothing
    return least if least > 0 else None


def _memory_file() -> int:
    """A file in memory for the packed blocks (a temporary file where memfd is missing)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("sessiontree-scan")
    with tempfile.TemporaryFile() as file:
        return os.dup(file.fileno())


def _line_start_after(storage: FileStorage, at: int, end: int) -> int | None:
    """The offset just after the first line end at or after `at` (None: no line end before `end`)."""
    while at < end:
        chunk = storage.read(at, min(1024 * 1024, end - at))
        if not chunk:
            return None
        found = chunk.find(b"\n")
        if found >= 0:
            return at + found + 1 if at + found + 1 < end else None
        at += len(chunk)
    return None


def _pread_all(fd: int, offset: int, size: int) -> bytes:
    parts = []
    while size:
        part = os.pread(fd, size, offset)
        if not part:
            raise EOFError("a scan worker's block is shorter than its notice said")
        parts.append(part)
        offset, size = offset + len(part), size - len(part)
    return b"".join(parts)


# --------------------------------------------------------------------------- the worker's side


def _run(storage: FileStorage, start: int, end: int, frames: int, notify: int) -> None:
    """The forked worker's whole life: never returns into the daemon's code."""
    code = 1
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a fault on a cut file ends it: no core file
        _keep_only([storage.fd, frames, notify])
        scan(storage, start, end, frames, notify)
        code = 0
    finally:
        os._exit(code)  # no cleanup of the daemon's state: it is the daemon's


def _keep_only(keep: list[int]) -> None:
    """Let go of every descriptor the fork inherited but `keep`: the client's pipes (so that a
    client sees the end of a daemon that dies during an open at once), sockets, other sessions."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    after = 3
    for fd in sorted(keep):
        os.closerange(after, fd)
        after = fd + 1
    os.closerange(after, max(os.sysconf("SC_OPEN_MAX"), after))


def scan(storage: FileStorage, start: int, end: int, frames: int, notify: int) -> None:
    """Hand over the columns of the whole lines in `[start, end)`, block by block, and where they stop."""
    stopped, written = start, 0
    for offset, block, ends in _mapped_blocks(storage.fd, start, end, CHUNK):
        starts = [0, *[at + 1 for at in ends[:-1]]]
        decoded = skeletons(block, starts, ends, 0)
        count = len(decoded)
        if count:
            ids, parents, kinds, stamps, settings = skeleton_columns(decoded)
            del decoded
            offsets = [offset + line_start for line_start in starts[:count]]
            lengths = [line_end - line_start for line_start, line_end in zip(starts[:count], ends[:count], strict=True)]
            written += _write_all(frames, pack(ids, parents, kinds, stamps, offsets, lengths, settings))
            _write_all(notify, _BLOCK + written.to_bytes(8, "big"))
            stopped = offset + ends[count - 1] + 1
        if count < len(ends):
            break
    _write_all(notify, _STOP + stopped.to_bytes(8, "big"))


def _mapped_blocks(fd: int, start: int, end: int, chunk: int) -> Iterator[tuple[int, memoryview, list[int]]]:
    """`(offset, block, ends)` as `LineBlocks` yields them for the whole lines in `[start, end)`,
    each block a view of the file mapped into memory: read where the page cache holds it, not
    copied (a fifth of a worker's time at 100,000 entries). Only the worker maps the file: if
    another program cut it meanwhile, the fault ends the worker, and the daemon reads on itself."""
    mapped = mmap.mmap(fd, end, access=mmap.ACCESS_READ)  # never unmapped: the worker exits after
    view = memoryview(mapped)
    position = start
    while position < end:
        last = mapped.rfind(b"\n", position, min(position + chunk, end))
        if last < 0:
            if position + chunk >= end:  # no line end before the range ends: not a whole line
                return
            chunk *= 2  # a line longer than a block: take it whole
            continue
        ends = [at - position for at in line_ends(mapped, last, position)]
        yield position, view[position : last + 1], ends
        position = last + 1


def _write_all(fd: int, data: bytes) -> int:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return len(data)
