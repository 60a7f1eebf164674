"""Splitting a byte range of a session file into lines, reading it in bounded chunks."""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from typing import Protocol

CHUNK = 8 * 1024 * 1024
BOM = b"\xef\xbb\xbf"


class Readable(Protocol):
    """All a line reader needs: a `Storage`, or another agent's session rendered as pi's lines."""

    def read(self, offset: int, length: int) -> bytes: ...


class _Span:
    """A byte range of a file read in chunks; after iteration, what follows its last line end."""

    def __init__(self, storage: Readable, start: int, end: int, chunk: int = CHUNK) -> None:
        self.storage = storage
        self.start = start
        self.end = end
        self.chunk = chunk
        self.tail_offset = start
        self.tail = b""
        self.done = False  # iterated to the end: `tail` is known


class LineReader(_Span):
    """Yields `(offset, line)` for every complete (`\\n`-terminated) line in `[start, end)`.

    After iteration, `tail_offset` and `tail` hold the bytes after the last `\\n`
    (empty when the range ends on a line end): a line still being written, or torn.
    """

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        carry: list[bytes] = []  # the start of a line, in blocks: a line of many blocks is joined once
        carry_offset = self.start
        position = self.start
        while position < self.end:
            block = self.storage.read(position, min(self.chunk, self.end - position))
            if not block:  # the file shrank under us; the caller re-checks the size
                break
            position += len(block)
            if b"\n" not in block:
                carry.append(block)
                continue
            pieces = b"".join((*carry, block)).split(b"\n")
            offset = carry_offset
            for line in pieces[:-1]:
                yield offset, line
                offset += len(line) + 1
            carry, carry_offset = [pieces[-1]], offset
        self.tail_offset, self.tail = carry_offset, b"".join(carry)
        self.done = True


class LineBlocks(_Span):
    """`LineReader` for a scan: yields `(offset, block, ends)` for blocks of whole lines in
    `[start, end)`: `block` holds the bytes from file offset `offset`, `ends` the positions of its
    `\\n`s (a line runs from the end before it, +1, to its own end). No line is copied out of its
    block: a scan decodes them through memoryview slices. `tail_offset`, `tail` and `done` as in
    `LineReader`."""

    def __iter__(self) -> Iterator[tuple[int, bytes, list[int]]]:
        position, end, chunk = self.start, self.end, self.chunk
        while position < end:
            want = min(chunk, end - position)
            block = self.storage.read(position, want)
            if not block:  # the file shrank under us; the caller re-checks the size
                break
            last = block.rfind(b"\n")
            if last < 0:
                if len(block) < want or position + len(block) >= end:  # no line end before the range ends
                    self.tail_offset, self.tail = position, block
                    self.done = True
                    return
                chunk *= 2  # a line longer than a block: read it whole
                continue
            ends = line_ends(block, last)
            yield position, block, ends
            position += last + 1
            if len(block) < want:  # short read: the file shrank
                self.tail_offset, self.tail = position, block[last + 1 :]
                self.done = True
                return
        self.tail_offset, self.tail = position, b""
        self.done = True


def line_ends(block: bytes | mmap.mmap, last: int, at: int = 0) -> list[int]:
    """The positions of the line ends in `block` from `at` to `last` (a line end)."""
    ends: list[int] = []
    find, append = block.find, ends.append
    while at <= last:
        at = find(b"\n", at)
        append(at)
        at += 1
    return ends
