"""A plan of a forked session's lines: copies of the source's lines, and lines made anew.

tree/fork decides what a fork keeps (pi's rules); the store writes the plan and indexes the
new file from it (`Session.adopt`), so the plan's shape belongs to the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .index import SessionIndex


class Copy:
    """Source entries whose lines follow each other in the source file (so their seqs do too):
    copied in one read."""

    __slots__ = ("seqs",)

    def __init__(self, seqs: list[int]) -> None:
        self.seqs = seqs


Part = Copy | bytes  # copied lines, or one line made anew


class ForkPlan:
    """The new file's entry lines, in order. `path`: the entries form one chain (a path's fork)."""

    def __init__(self, path: bool) -> None:
        self.parts: list[Part] = []
        self.path = path

    def chunks(self, index: SessionIndex, read: Callable[[int, int], bytes]) -> Iterator[bytes]:
        """The bytes of the lines, line ends included, copies read from the source (`index`, `read`)."""
        for part in self.parts:
            if isinstance(part, Copy):
                start, last = index.offsets[part.seqs[0]], part.seqs[-1]
                length = index.offsets[last] + index.lengths[last] - start
                data = read(start, length + 1)  # with the line end after it: no copy to add one
                yield data if data[length:] == b"\n" else data[:length] + b"\n"  # the file's unended last line
            else:
                yield part + b"\n"
