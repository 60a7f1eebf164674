"""The tree as a view shows it: folded, in pages, without a pass over every entry per call.

pi writes each entry on the line after its parent, except where a conversation branches or
resumes. So the index's parents column is almost everywhere `seq - 1`; the few entries where it is
not (the *jumps*) describe the whole shape. The folded tree is made from them: an entry with more
than one child starts indented branches; a stretch of consecutive entries that each have one child
and nothing to show (no label, not a compaction, branch summary or context edit, not the leaf) becomes one *run*
row with its length, listed entry by entry only when asked. The index lists the jumps as entries
arrive (`SessionIndex.jumps`, filed by parent in `jump_parents`, and whether the file is in time
order), so the first page, or the page that shows the leaf, costs about the number of jumps, and
later pages only their own rows; nothing here is per entry.

Rows come in pi's `getTree` order (depth-first, siblings by timestamp), indented once per branch.
"""

from __future__ import annotations

import re
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from functools import partial
from itertools import accumulate, islice, repeat
from operator import itemgetter, le, lt, sub
from typing import Any

from ..store import SessionIndex
from ..tree_nodes import TreeNode, TreeRow, TreeRun
from .tree import _ms, _parents

Preview = Callable[[int], str | None]
# Always rows of their own: entries that change what the model sees of what came before.
# (usage entries, which pi's tree hides, fold into runs like any entry with nothing to show.)
_SHOWN_TYPES = frozenset({"compaction", "branch_summary", "context_edit"})
_MARKED = re.compile(b"\x01")


class Row:
    """One row: the entry at `first`, or the run of entries `first..last` (consecutive seqs)."""

    __slots__ = ("first", "indent", "last")

    def __init__(self, first: int, last: int, indent: int) -> None:
        self.first, self.last, self.indent = first, last, indent

    @property
    def is_run(self) -> bool:
        return self.last > self.first


class FoldedTree:
    """The rows of one version of the index with one leaf, and how to find an entry among them.

    The entries fall into *stretches*: from a head (a root, an entry whose parent is not the line
    before it, or the first child of a branch point) down the lines that follow it, each the only
    child of the one before, to the first that branches, ends or is followed by a jump. Each stretch
    is its head's row, then a row for each entry worth one (a *stop*: labelled, a compaction, the
    leaf, a branch point, the stretch's end) with a run row before it where entries lie between. A
    stretch with nothing shown inside has one to three rows by its length alone; only the few with
    shown entries inside (`_inner`) are counted stop by stop. The row order (depth first, siblings
    by time) only permutes whole stretches. A page past the first or a position places every
    stretch in row order from the rows below each (`_place`: two passes over the branch points, in
    file order and back, no walk), or, where a parent follows its child in the file (a cycle is
    then possible), walks them. No row is made until a page needs it.
    """

    def __init__(self, index: SessionIndex) -> None:
        self.index = index
        count = len(index)
        roots: list[int] = []
        if index.anchors_hold:  # no id repeats: the parents column is the tree, its jumps listed by parent
            jumps = index.jumps()
            extra, unparented, later_parent = index.jump_parents()
            # Those without a parent on arrival: a root, a parent not in the file, or one that came later.
            resolved: dict[int, int | None] = {seq: _jump_parent(index, seq) for seq in unparented}
            adopted = [(seq, parent) for seq, parent in resolved.items() if parent is not None]
            if adopted:  # the index's lists are not to be changed: new lists where these join
                extra = dict(extra)
                for seq, parent in adopted:
                    extra[parent] = sorted([*extra.get(parent, ()), seq])
                    later_parent = later_parent or parent > seq
            roots = [seq for seq, parent in resolved.items() if parent is None]
        else:  # a repeated id may move any parent: take pi's lookup for every entry (rare files)
            parents = _parents(index)
            jumps = [seq for seq, parent in enumerate(parents) if parent != seq - 1]
            resolved = {seq: parents[seq] for seq in jumps}
            by_id, ids = index.by_id, index.ids
            extra = {}
            for seq, above in resolved.items():  # in jumps order: each parent's jump children ascending
                if above is None:
                    if by_id[ids[seq]] == seq:  # not shadowed by a later line with its id
                        roots.append(seq)
                elif (kids := extra.get(above)) is None:
                    extra[above] = [seq]
                else:
                    kids.append(seq)
            later_parent = True  # some entry may be on a cycle, which no root reaches
        self.count = count
        self.jumps = jumps
        self._jump_set = set(jumps)
        self._resolved = resolved  # the parents of jumps not read from the parents column
        self.extra: dict[int, list[int]] = extra  # parent seq -> children that are jumps (not to be changed)
        self._sorted: dict[int, list[int]] = {}  # children of the entries with jump children, in order
        self.roots = roots
        self.leaf = index.by_id.get(index.leaf_id) if index.leaf_id is not None else None
        self.shown = self._shown()
        # Stretches by their heads; each ends on the line before the next head (or the last line).
        self._branching = sorted(extra)
        jumped = self._jump_set
        self.heads = sorted([*jumps, *(seq + 1 for seq in self._branching if seq + 1 < count and seq + 1 not in jumped)])
        head_set = set(self.heads)
        # Each stretch's rows: its head, its end, the entries always shown between them (`_inner`,
        # ascending), and a run wherever two of these are apart.
        self._ends = [*(seq - 1 for seq in islice(self.heads, 1, None)), count - 1] if count else []
        heads, ends = self.heads, self._ends
        self._inner = [seq for seq in sorted(self.shown) if seq not in head_set and seq + 1 not in head_set and seq < count - 1]
        self._rows = [3 if lines > 1 else lines + 1 for lines in map(sub, ends, heads)]  # head, a run, end (or fewer)
        if self._inner:
            self._count_inner()
        self._walked: tuple[list[int], list[int], list[int]] | None = None  # stretches in row order, indents, first rows
        self._where: dict[int, int] | None = None  # stretch -> its place in row order
        self._later_parent = later_parent
        self._in_time_order = index.anchors_hold and index.siblings_in_time_order()  # children in file order are in time order
        # Each stretch's first row in row order, its rows and those of the stretches below it (the
        # last slot: the roots'), its indent (see `_place`).
        self._placed: tuple[list[int], list[int], list[int]] | None = None
        self._total = None if later_parent else sum(self._rows)
        self._path: list[tuple[int, int]] | None = None

    # ------------------------------------------------------------------ shape

    def children(self, seq: int) -> list[int]:
        """pi's order: by timestamp, stable in file order."""
        extra = self.extra.get(seq)
        natural = seq + 1 < self.count and seq + 1 not in self._jump_set
        if extra is None:
            return [seq + 1] if natural else []
        kids = self._sorted.get(seq)
        if kids is None:
            kids = sorted(([seq + 1] if natural else []) + extra)  # file order: time order, in a file in time order
            kids = self._sorted[seq] = kids if self._in_time_order else _by_time(kids, self.index.timestamps)
        return kids

    def _shown(self) -> set[int]:
        """Entries that are always rows: labelled, compactions, branch summaries, context edits, the leaf."""
        index = self.index
        shown = {self.leaf} if self.leaf is not None else set()
        kinds = index.kinds
        wanted = [code for code, kind in enumerate(kinds.values) if isinstance(kind, tuple) and kind[0] in _SHOWN_TYPES]
        if wanted:
            shown.update(_positions(kinds.codes, wanted, len(kinds.values)))
        labelled = [target for target, (label, _) in index.labels.items() if label is not None]
        by_id = index.by_id if labelled else {}
        shown.update(seq for target in labelled if (seq := by_id.get(target)) is not None)
        return shown

    def _leaf_path(self) -> list[tuple[int, int]]:
        """The leaf's path as ascending intervals of seqs (each a stretch of natural parents)."""
        intervals: list[tuple[int, int]] = []
        jumps, append, resolved, parents = self.jumps, intervals.append, self._resolved, self.index.parents
        seq: int | None = self.leaf
        seen: set[int] | None = set() if self._later_parent else None  # a cycle is possible: watch for one
        while seq is not None:
            if seen is not None:
                if seq in seen:
                    break
                seen.add(seq)
            jump = jumps[bisect_right(jumps, seq) - 1]  # jumps[0] is 0
            append((jump, seq))
            seq = resolved[jump] if jump in resolved else parents[jump]
        intervals.reverse()
        return intervals

    @property
    def path(self) -> list[tuple[int, int]]:
        if self._path is None:
            self._path = self._leaf_path()
        return self._path

    def on_path(self, seq: int) -> bool:
        if self.leaf is not None and not self._later_parent:  # an ancestor's rows hold the leaf's in row order
            firsts, below, _ = self._place()  # cheaper than the path through every jump above the leaf
            stretch, leaf = self._stretch_of(seq), self._stretch_of(self.leaf)
            if stretch == leaf:
                return seq <= self.leaf
            return firsts[stretch] <= firsts[leaf] < firsts[stretch] + below[stretch]
        at = bisect_right(self.path, (seq, self.count)) - 1
        return at >= 0 and self.path[at][0] <= seq <= self.path[at][1]

    # ------------------------------------------------------------------ stretches

    def _stretch_of(self, seq: int) -> int:
        return bisect_right(self.heads, seq) - 1

    def _count_inner(self) -> None:
        """Count again the rows of the stretches with shown entries inside: after the head, each
        stop (those entries, then the end) is a row, with a run before it if apart from the last."""
        heads, ends, rows = self.heads, self._ends, self._rows
        current, before = -1, 0
        for seq, stretch in zip(self._inner, map(bisect_right, repeat(heads), self._inner), strict=True):
            if stretch - 1 != current:
                if current >= 0:
                    rows[current] += 1 + (ends[current] - before > 1)
                current, before = stretch - 1, heads[stretch - 1]
                rows[current] = 1
            rows[current] += 1 + (seq - before > 1)
            before = seq
        rows[current] += 1 + (ends[current] - before > 1)

    def _local_rows(self, stretch: int) -> list[tuple[int, int]]:
        """A stretch's rows as (first, last) seqs: its stops (head, shown entries, end), with a
        run between two that are apart."""
        head, end, inner = self.heads[stretch], self._ends[stretch], self._inner
        stops = [head, *inner[bisect_right(inner, head) : bisect_left(inner, end)], end] if end > head else [head]
        found = [(head, head)]
        for before, stop in zip(stops, islice(stops, 1, None), strict=False):  # each stop after the head
            if stop - before > 1:
                found.append((before + 1, stop - 1))
            found.append((stop, stop))
        return found

    def _offset(self, stretch: int, seq: int) -> int:
        """The place, among its stretch's rows, of the row that shows `seq`."""
        return bisect_right(self._local_rows(stretch), (seq, self.count)) - 1

    def _stretches(self, where: Callable[[int], int]) -> Iterator[tuple[int, int]]:
        """(stretch, indent) in row order: depth first from the roots in file order, siblings by
        time. `where`: the stretch a head starts."""
        heads, extra, children, count = self.heads, self.extra, self.children, self.count
        last, seen = len(heads) - 1, bytearray(len(heads))
        stack = [(where(root), 0) for root in reversed(self.roots)]
        pop, push = stack.pop, stack.append
        while stack:
            stretch, indent = pop()
            if seen[stretch]:  # a parent cycle through a repeated id: never walk it twice
                continue
            seen[stretch] = 1
            yield stretch, indent
            end = heads[stretch + 1] - 1 if stretch < last else count - 1
            if end in extra:
                kids = children(end)
                if len(kids) == 1:  # the chain goes on at the same indent
                    push((where(kids[0]), indent))
                else:
                    stack.extend([(where(kid), indent + 1) for kid in reversed(kids)])

    def _walk(self) -> tuple[list[int], list[int], list[int]]:
        """Every reached stretch in row order, its indent, and the position of its first row."""
        if self._walked is None:
            if not self._later_parent:  # placed without a walk: sorted by first row
                firsts, _, indents = self._place()
                order = sorted(range(len(self.heads)), key=firsts.__getitem__)
                self._walked = (order, list(map(indents.__getitem__, order)), [*map(firsts.__getitem__, order), self.total])
                return self._walked
            where = dict(zip(self.heads, range(len(self.heads)), strict=True))
            walked = list(self._stretches(where.__getitem__))
            order, indents = [stretch for stretch, _ in walked], [indent for _, indent in walked]
            lengths = list(map(self._rows.__getitem__, order))
            self._walked = (order, indents, list(accumulate(lengths, initial=0)))
            self._total = self._walked[2][-1]
        return self._walked

    def _place(self) -> tuple[list[int], list[int], list[int]]:
        """Without a walk in row order (every parent before its children in the file, so every
        stretch is reached and a stretch's parent stretch comes before it): each stretch's rows
        and those of all stretches below it, summed from the last branch point back; then each
        stretch's first row in row order, from the first forward: a child's is its parent's first
        row plus the parent's rows plus the rows below its earlier siblings. Two passes over the
        branch points, in file order and back, with no stack."""
        if self._placed is None:
            heads, count = self.heads, len(self.heads)
            where = dict(zip(heads, range(count), strict=True))
            rows = self._rows
            below = rows.copy()  # rows per stretch, then with those below
            # Per branch point (each ends its stretch, and comes before its jump children): the
            # stretch it ends, then its children's stretches in order, the usual two as two lists.
            # From the last back, a branch point's children have their sums before it is summed.
            ends, firsts_, seconds, others = self._branch_kids(where)
            if not others:
                for stretch, first, second in zip(reversed(ends), reversed(firsts_), reversed(seconds), strict=True):
                    below[stretch] += below[first] + below[second]
            else:
                for at in range(len(ends) - 1, -1, -1):
                    kids = others.get(at) or (firsts_[at], seconds[at])
                    below[ends[at]] += sum(map(below.__getitem__, kids))
            starts, indents = [0] * count, [0] * count
            row = 0
            for root in self.roots:
                stretch = where[root]
                starts[stretch] = row
                row += below[stretch]
            for at, (stretch, first, second) in enumerate(zip(ends, firsts_, seconds, strict=True)):
                row = starts[stretch] + rows[stretch]
                if second >= 0:
                    starts[first], starts[second] = row, row + below[first]
                    indents[first] = indents[second] = indents[stretch] + 1
                    continue
                kids = others[at]
                indent = indents[stretch] + (len(kids) > 1)
                for kid in kids:
                    starts[kid], indents[kid] = row, indent
                    row += below[kid]
            self._placed = (starts, below, indents)
        return self._placed

    def _branch_kids(self, where: dict[int, int]) -> tuple[list[int], list[int], list[int], dict[int, list[int]]]:
        """Per branch point, ascending: the stretch it ends, and its children's stretches in pi's
        order: for the usual branch point (the next line and one jump, in a file in time order or
        both stamped as pi writes them, which compare as text) the first and the second, else -1
        and the list in `others`."""
        branching, extra, stamps = self._branching, self.extra, self.index.timestamps
        nexts = [seq + 1 for seq in branching]  # the line after a branch point is a head
        kids_of = list(map(extra.__getitem__, branching))
        jumped_set = self._jump_set
        if self._in_time_order and set(map(len, kids_of)) <= {1} and jumped_set.isdisjoint(nexts):
            # The usual file: each branch point's next line and one later jump, in that order.
            firsts = list(map(where.__getitem__, nexts))
            return [first - 1 for first in firsts], firsts, list(map(where.__getitem__, map(itemgetter(0), kids_of))), {}
        ends = [where[seq] - 1 for seq in nexts]
        lone = [kids[0] if len(kids) == 1 else -1 for kids in kids_of]
        others: dict[int, list[int]] = {}
        if self._in_time_order:  # siblings in time order are in file order
            if -1 in lone or not jumped_set.isdisjoint(nexts):
                for at, seq in enumerate(branching):  # some are not the usual: those in turn
                    if lone[at] < 0 or nexts[at] in jumped_set:
                        others[at] = list(map(where.__getitem__, self.children(seq)))
            early = list(map(lt, nexts, lone))
        else:
            naturals = list(map(stamps.__getitem__, nexts))
            jumped: list[Any] = [stamps[jump] if jump >= 0 else None for jump in lone]
            if -1 in lone or not jumped_set.isdisjoint(nexts) or not _pi_stamps(naturals) or not _pi_stamps(jumped):
                for at, seq in enumerate(branching):  # some are not the usual: those in turn
                    if lone[at] < 0 or nexts[at] in jumped_set or not _pi_stamps([naturals[at], jumped[at]]):
                        others[at] = list(map(where.__getitem__, self.children(seq)))
                early = [at in others or natural <= jump for at, (natural, jump) in enumerate(zip(naturals, jumped, strict=True))]
            else:
                early = list(map(le, naturals, jumped))
        jumps = [-1 if jump < 0 else where[jump] for jump in lone]
        # Equal times keep file order: the next line first.
        firsts = [end + 1 if natural_first else jump for end, jump, natural_first in zip(ends, jumps, early, strict=True)]
        seconds = [jump if natural_first else end + 1 for end, jump, natural_first in zip(ends, jumps, early, strict=True)]
        for at in others:
            firsts[at] = seconds[at] = -1
        return ends, firsts, seconds, others

    @property
    def total(self) -> int:
        """Rows in all (entries on a parent cycle, which no root reaches, have none)."""
        if self._total is None:
            self._walk()
        assert self._total is not None
        return self._total

    def _rows_of(self, stretch: int, indent: int, start: int = 0) -> Iterator[Row]:
        """A stretch's rows, from its `start`th."""
        for first, last in islice(self._local_rows(stretch), start, None):
            yield Row(first, last, indent)

    def page(self, offset: int, limit: int) -> list[Row]:
        """The rows at positions offset..offset + limit - 1."""
        found: list[Row] = []
        if self._walked is None and offset == 0:  # the first page: walk only as far as it goes
            for stretch, indent in self._stretches(partial(bisect_left, self.heads)):
                found.extend(islice(self._rows_of(stretch, indent), limit - len(found)))
                if len(found) >= limit:
                    break
            return found
        order, indents, firsts = self._walk()
        at = bisect_right(firsts, offset) - 1
        while at < len(order) and len(found) < limit:
            rows = self._rows_of(order[at], indents[at], offset - firsts[at] if offset > firsts[at] else 0)
            found.extend(islice(rows, limit - len(found)))
            at += 1
        return found

    @property
    def rows(self) -> list[Row]:
        """Every row in order."""
        return self.page(0, self.total) if self.total else []

    def find(self, seq: int) -> int | None:
        """The position of the row that shows `seq` (itself, or the run it is in)."""
        if not 0 <= seq < self.count:
            return None
        stretch = self._stretch_of(seq)
        if not self._later_parent:
            first = self._place()[0][stretch]
        else:
            order, _, firsts = self._walk()
            if self._where is None:
                self._where = {stretch: at for at, stretch in enumerate(order)}
            at = self._where.get(stretch)
            if at is None:
                return None
            first = firsts[at]
        return first + self._offset(stretch, seq)


def flat_nodes(tree: FoldedTree, previews: list[str | None]) -> list[TreeNode] | None:
    """pi's getTree flattened (as `tree.flat_tree`), made a stretch at a time from the folded
    tree's order: each stretch's entries are consecutive lines, each a level deeper than the one
    before and the only child of it, so their columns are sliced, not looked up entry by entry.
    None where a parent follows its child in the file (a cycle is possible): take `flat_tree`."""
    if tree._later_parent:
        return None
    index = tree.index
    if not len(index):
        return []
    order = tree._walk()[0]
    heads, ends, children = tree.heads, tree._ends, tree.children
    resolved, jumped, parents = tree._resolved, tree._jump_set, index.parents  # as the folded tree has them
    ids, stamps, codes, values = index.ids, index.timestamps, index.kinds.codes, index.kinds.values
    types = [kind and kind[0] for kind in values]  # (a code may stand for no kind: no entry has it)
    roles = [kind and kind[1] for kind in values]
    depth_of: dict[int, int] = {}  # a stretch's head's depth
    first_of: dict[int, int] = {}  # a stretch's head's place among the nodes
    nodes: list[TreeNode] = []
    for stretch in order:  # a parent's stretch before its children's
        head, end = heads[stretch], ends[stretch]
        parent = resolved[head] if head in resolved else parents[head] if head in jumped else head - 1
        if parent is None:
            depth = 0
        else:
            above = bisect_right(heads, parent) - 1
            depth = depth_of[above] + parent - heads[above] + 1
        depth_of[stretch], first_of[stretch] = depth, len(nodes)
        count = end - head + 1
        kinds = codes[head : end + 1]
        nodes += map(
            TreeNode,
            ids[head : end + 1],
            [index.parent_id(head), *ids[head:end]],
            map(types.__getitem__, kinds),
            stamps[head : end + 1],
            range(depth, depth + count),
            [*repeat(1, count - 1), len(children(end))],
            repeat(None, count),
            repeat(None, count),
            map(roles.__getitem__, kinds),
            previews[head : end + 1],
        )
    for target, (label, stamp) in index.labels.items():  # ids are distinct here
        seq = index.by_id.get(target)
        if seq is not None:
            stretch = bisect_right(heads, seq) - 1
            node = nodes[first_of[stretch] + seq - heads[stretch]]
            node.label, node.label_timestamp = label, stamp
    return nodes


def _by_time(kids: list[int], stamps: list[Any]) -> list[int]:
    """Sorted as pi sorts siblings (by time, stable); timestamps as pi writes them compare as text."""
    if len(kids) < 2:
        return kids
    if len(kids) == 2:  # the usual branch point: two children, stamped as pi writes them
        first, second = stamps[kids[0]], stamps[kids[1]]
        if type(first) is str and type(second) is str and len(first) == len(second) == 24 and first[-1] == second[-1] == "Z":
            return kids if first <= second else [kids[1], kids[0]]
    found = [stamps[kid] for kid in kids]
    if all(type(stamp) is str and len(stamp) == 24 and stamp[-1] == "Z" for stamp in found):
        return [kid for _, kid in sorted(zip(found, kids, strict=True), key=lambda pair: pair[0])]
    return sorted(kids, key=lambda kid: _ms(stamps[kid]))


def _pi_stamps(stamps: list[Any]) -> bool:
    """Whether these are all times as pi writes them (24 characters, ending in Z): they compare
    as text as pi compares them as times."""
    try:
        return set(map(len, stamps)) <= {24} and "".join(stamps)[23::24] == "Z" * len(stamps)
    except TypeError:  # not all text
        return False


def _jump_parent(index: SessionIndex, seq: int) -> int | None:
    column = index.parents[seq]
    # Below 0: a root, or a parent id that was not in the file when the entry arrived.
    parent = index.parent_seq(seq) if column < 0 else column
    return None if parent == seq else parent  # its own parent: a root, as pi's getTree makes it


def _positions(codes: array[int], wanted: list[int], distinct: int) -> list[int]:
    """The seqs whose code is one of `wanted` (of `distinct` codes), found in the column's bytes at C speed."""
    data, size = codes.tobytes(), codes.itemsize
    if distinct <= 256 and size == 4 and sys.byteorder == "little":  # every code is its low byte: mark those
        table = bytes(1 if code in wanted else 0 for code in range(256))
        return [match.start() for match in _MARKED.finditer(data[::4].translate(table))]
    found = []  # codes of more than one byte (in odd files only)
    for code in wanted:
        pattern = array(codes.typecode, [code]).tobytes()
        at = data.find(pattern)
        while at >= 0:
            if at % size:  # straddles two codes
                at = data.find(pattern, at + 1)
                continue
            found.append(at // size)
            at = data.find(pattern, at + size)
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
