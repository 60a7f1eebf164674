"""Splitting a byte range of a session file into lines, reading it in bounded chunks."""

from __future__ import annotations

from collections.abc import Iterator

from .storage import Storage

CHUNK = 8 * 1024 * 1024
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
        self.done = False  # iterated to the end: `tail` is known

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
