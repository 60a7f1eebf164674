"""Splitting a byte range of a session file into lines, reading it in bounded chunks."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate

from .storage import Storage

CHUNK = 8 * 1024 * 1024
Batch = tuple[list[int], list[bytes]]  # line offsets, lines
BOM = b"\xef\xbb\xbf"


class LineReader:
    """Yields `(offset, line)` for every complete (`\\n`-terminated) line in `[start, end)`.

    After iteration, `tail_offset` and `tail` hold the bytes after the last `\\n`
    (empty when the range ends on a line end): a line still being written, or torn.
    """

    def __init__(self, storage: Storage, start: int, end: int, chunk: int = CHUNK) -> None:
        self.storage = storage
        self.start = start
        self.end = end
        self.chunk = chunk
        self.tail_offset = start
        self.tail = b""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for offsets, lines in self.batches():
            yield from zip(offsets, lines)

    def batches(self) -> Iterator[Batch]:
        """The same lines, a chunk's worth at a time: `(offsets, lines)`."""
        carry = b""
        carry_offset = self.start
        position = self.start
        while position < self.end:
            block = self.storage.read(position, min(self.chunk, self.end - position))
            if not block:  # the file shrank under us; the caller re-checks the size
                break
            position += len(block)
            lines = (carry + block).split(b"\n")
            carry = lines.pop()
            offsets = list(accumulate((len(line) + 1 for line in lines), initial=carry_offset))
            carry_offset = offsets.pop()
            if lines:
                yield offsets, lines
        self.tail_offset, self.tail = carry_offset, carry
