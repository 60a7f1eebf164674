"""The tree as a view shows it: folded, in pages, without a pass over every entry per call.

pi writes each entry on the line after its parent, except where a conversation branches or
resumes. So the index's parents column is almost everywhere `seq - 1`; the few entries where it is
not (the *jumps*) describe the whole shape. The folded tree is made from them: an entry with more
than one child starts indented branches; a stretch of consecutive entries that each have one child
and nothing to show (no label, not a compaction or branch summary, not the leaf) becomes one *run*
row with its length, listed entry by entry only when asked. Jumps are found by comparing the
parents column with `seq - 1` as whole buffers, and extended as entries arrive, so a call costs
about the number of jumps, branch points and rows, not the number of entries.

Rows come in pi's `getTree` order (depth-first, siblings by timestamp), indented once per branch.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from ..store import SessionIndex
from ..tree_nodes import TreeRow, TreeRun
from .tree import _ms, _parents

Preview = Callable[[int], str | None]
_SHOWN_TYPES = frozenset({"compaction", "branch_summary"})  # always rows of their own
_NONZERO = re.compile(rb"[^\x00]+")


class Row:
    """One row: the entry at `first`, or the run of entries `first..last` (consecutive seqs)."""

    __slots__ = ("first", "indent", "last")

    def __init__(self, first: int, last: int, indent: int) -> None:
        self.first, self.last, self.indent = first, last, indent

    @property
    def is_run(self) -> bool:
        return self.last > self.first


class Shape:
    """Where the parents column departs from `seq - 1`, kept up to date as entries arrive."""

    def __init__(self) -> None:
        self.covered = 0  # entries looked at
        self.jumps: list[int] = []  # seqs whose parent is not the entry before them, ascending

    def update(self, index: SessionIndex) -> None:
        count = len(index)
        if count > self.covered:
            found = _jumps(index.parents, self.covered, count)
            if self.covered == 0 and found[:1] != [0]:  # the first entry is a root: ROOT is -1 too
                found.insert(0, 0)
            self.jumps += found
            self.covered = count


def _jumps(parents: array[int], start: int, end: int) -> list[int]:
    """The seqs in [start, end) whose parents entry is not seq - 1: XOR of the two buffers as big
    integers, then the nonzero bytes found by a regex, all at C speed."""
    if end - start < 64:
        return [seq for seq in range(start, end) if parents[seq] != seq - 1]
    expected = array("i", range(start - 1, end - 1)).tobytes()
    found = memoryview(parents).cast("B")[4 * start : 4 * end].tobytes()
    width = len(found)
    diff = (int.from_bytes(found, "little") ^ int.from_bytes(expected, "little")).to_bytes(width, "little")
    seqs: list[int] = []
    for match in _NONZERO.finditer(diff):
        first, last = match.start() // 4, (match.end() - 1) // 4
        seqs.extend(range(start + first, start + last + 1))
    return sorted(set(seqs))


class FoldedTree:
    """The rows of one version of the index with one leaf, and how to find an entry among them."""

    def __init__(self, index: SessionIndex, shape: Shape) -> None:
        self.index = index
        count = len(index)
        if index.anchors_hold:  # no id repeats: the parents column is the tree
            shape.update(index)
            jumps = shape.jumps
            parent_of = {seq: _jump_parent(index, seq) for seq in jumps}
            shadowed: set[int] = set()
        else:  # a repeated id may move any parent: take pi's lookup for every entry (rare files)
            parents = _parents(index)
            jumps = [seq for seq, parent in enumerate(parents) if parent != seq - 1]
            parent_of = {seq: parents[seq] for seq in jumps}
            by_id, ids = index.by_id, index.ids
            shadowed = {seq for seq in jumps if parents[seq] is None and by_id[ids[seq]] != seq}
        self.count = count
        self.jumps = jumps
        self._jump_set = set(jumps)
        self.parent_of = parent_of
        self.extra: dict[int, list[int]] = {}  # parent seq -> children that are jumps
        self._sorted: dict[int, list[int]] = {}  # children of the entries with jump children, in order
        roots: list[int] = []
        for seq in jumps:
            parent = parent_of[seq]
            if parent is None:
                if seq not in shadowed:
                    roots.append(seq)
            else:
                self.extra.setdefault(parent, []).append(seq)
        self.leaf = index.by_id.get(index.leaf_id) if index.leaf_id is not None else None
        shown = self._shown()
        ends = (seq - 1 for seq in jumps if seq > 0)
        self.stops = sorted({*shown, *self.extra, *ends, count - 1} - {-1})
        self.shown = shown
        self.path = self._leaf_path()
        self.rows = self._rows(roots)

    # ------------------------------------------------------------------ shape

    def children(self, seq: int) -> list[int]:
        """pi's order: by timestamp, stable in file order."""
        extra = self.extra.get(seq)
        natural = seq + 1 < self.count and seq + 1 not in self._jump_set
        if extra is None:
            return [seq + 1] if natural else []
        kids = self._sorted.get(seq)
        if kids is None:
            kids = self._sorted[seq] = _by_time(([seq + 1] if natural else []) + sorted(extra), self.index.timestamps)
        return kids

    def _shown(self) -> set[int]:
        """Entries that are always rows: labelled, compactions, branch summaries, the leaf."""
        index = self.index
        shown = {self.leaf} if self.leaf is not None else set()
        kinds = index.kinds
        for code, kind in enumerate(kinds.values):
            if isinstance(kind, tuple) and kind[0] in _SHOWN_TYPES:
                shown.update(_positions(kinds.codes, code))
        labelled = [target for target, (label, _) in index.labels.items() if label is not None]
        by_id = index.by_id if labelled else {}
        shown.update(seq for target in labelled if (seq := by_id.get(target)) is not None)
        return shown

    def _leaf_path(self) -> list[tuple[int, int]]:
        """The leaf's path as ascending intervals of seqs (each a stretch of natural parents)."""
        intervals: list[tuple[int, int]] = []
        seq, seen = self.leaf, set()
        while seq is not None and seq not in seen:
            seen.add(seq)
            jump = self.jumps[bisect_right(self.jumps, seq) - 1] if self.jumps and self.jumps[0] <= seq else 0
            intervals.append((jump, seq))
            seq = self.parent_of.get(jump)
        intervals.reverse()
        return intervals

    def on_path(self, seq: int) -> bool:
        at = bisect_right(self.path, (seq, self.count)) - 1
        return at >= 0 and self.path[at][0] <= seq <= self.path[at][1]

    # ------------------------------------------------------------------ rows

    def _rows(self, roots: list[int]) -> list[Row]:
        rows: list[Row] = []
        seen: set[int] = set()
        stack = [(root, 0) for root in reversed(roots)]
        while stack:
            head, indent = stack.pop()
            if head in seen:  # a parent cycle through a repeated id: never walk it twice
                continue
            stack.extend(self._chain(head, indent, rows, seen))
        return rows

    def _chain(self, seq: int, indent: int, rows: list[Row], seen: set[int]) -> Iterable[tuple[int, int]]:
        """Rows of the chain from `seq` until it ends or branches; returns the branches to walk."""
        rows.append(Row(seq, seq, indent))
        seen.add(seq)
        while True:
            kids = self.children(seq)
            if len(kids) != 1:
                return [(kid, indent + 1) for kid in reversed(kids)]
            kid = kids[0]
            if kid in seen:  # a parent cycle through a repeated id: stop where it would repeat
                return []
            if kid == seq + 1 and kid not in self.shown and kid not in self.extra:
                stop = self.stops[bisect_left(self.stops, kid)]  # the chain's next entry worth a row
                if stop > kid:
                    rows.append(Row(kid, stop - 1, indent))
                kid = stop
            rows.append(Row(kid, kid, indent))
            seen.add(kid)
            seq = kid

    def find(self, seq: int) -> int | None:
        """The position of the row that shows `seq` (itself, or the run it is in)."""
        for position, row in enumerate(self.rows):
            if row.first <= seq <= row.last:
                return position
        return None


def _by_time(kids: list[int], stamps: list[Any]) -> list[int]:
    """Sorted as pi sorts siblings (by time, stable); timestamps as pi writes them compare as text."""
    if len(kids) < 2:
        return kids
    found = [stamps[kid] for kid in kids]
    if all(type(stamp) is str and len(stamp) == 24 and stamp[-1] == "Z" for stamp in found):
        return [kid for _, kid in sorted(zip(found, kids, strict=True), key=lambda pair: pair[0])]
    return sorted(kids, key=lambda kid: _ms(stamps[kid]))


def _jump_parent(index: SessionIndex, seq: int) -> int | None:
    column = index.parents[seq]
    # Below 0: a root, or a parent id that was not in the file when the entry arrived.
    parent = index.parent_seq(seq) if column < 0 else column
    return None if parent == seq else parent  # its own parent: a root, as pi's getTree makes it


def _positions(codes: array[int], code: int) -> list[int]:
    found, start = [], 0
    try:
        while True:
            start = codes.index(code, start)
            found.append(start)
            start += 1
    except ValueError:
        return found


def row_of(tree: FoldedTree, row: Row, preview: Preview) -> TreeRow:
    """A row as the wire shows it (see protocol.md, session/treeView)."""
    index, seq = tree.index, row.first
    entry_type, role = index.kinds.values[index.kinds.codes[seq]]
    entry_id = index.ids[seq]
    label = index.labels.get(entry_id)
    shown = TreeRow(entry_id, entry_type, row.indent, index.timestamps[seq], preview(seq), role)
    if label is not None and label[0] is not None:
        shown.label = label[0]
    if row.is_run:
        shown.run = TreeRun(row.last - row.first + 1, index.ids[row.last])
    else:
        shown.children = len(tree.children(seq))
    if tree.on_path(seq):
        shown.on_leaf_path = True
    if seq == tree.leaf:
        shown.leaf = True
    return shown
