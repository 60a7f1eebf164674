"""The in-memory index of one session file, kept in columns: no object per entry.

A 100,000-entry session is a handful of arrays and two lists of strings, so it
costs little memory and can be saved to and loaded from an index sidecar
(`sidecar.py`) without building anything per entry. `Node`s are made on demand
from the columns.
"""

from __future__ import annotations

import gc
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, compress
from operator import sub
from typing import Any, TypeVar, overload

from ..entries import Node, js_trim
from ..file_warning import FileWarning
from .columns import Codes, SparseCodes
from .packed_columns import BlockColumns

T = TypeVar("T")
ROOT = -1  # parents column: the entry has no parent
MISSING = -2  # parents column: the parent id is not in the file (yet)
UNANCHORED = -1  # anchor column: the path was not whole when the entry arrived

# Entry types that change what the anchors carry down the path (and assistant messages: the model).
_THINKING, _MODEL, _COMPACTION = "thinking_level_change", "model_change", "compaction"

_SETTERS = {_THINKING: 0, _MODEL: 1, _COMPACTION: 2}  # -> position in an anchor record
_NAMING = frozenset({"label", "session_info"})  # entries that change labels or the name

def _setter_of(kind: tuple[str, str | None] | None) -> int:
    """Which position of an anchor record an entry of this (type, role) sets; -1: none."""
    if kind is None:
        return -1
    type_, role = kind
    return 1 if type_ == "message" and role == "assistant" else _SETTERS.get(type_, -1)


Anchors = tuple[Node | None, Node | None, Node | None]  # thinking change, model setter, compaction


def _long_lived(value: T) -> T:
    """A column made after the session was opened lives as long as it: keep the cycle collector
    from walking its 100,000 items at every full collection (as the service does at open)."""
    gc.freeze()
    return value


def _pi_time(stamp: Any) -> bool:
    """Stamped as pi stamps a time (`toISOString`): such stamps compare as text as they do as times."""
    return type(stamp) is str and len(stamp) == 24 and stamp[23] == "Z"


def _no_earlier(seq: int, before: list[int], stamps: list[Any], start: int, earlier: list[Any]) -> bool:
    """Whether entry `seq` and those `before` it are stamped as pi stamps times, none later than
    `seq`'s (`stamps`: of the entries from `start`; `earlier`: of those before)."""
    mine = stamps[seq - start]
    if not _pi_time(mine):
        return False
    for at in before:
        other = stamps[at - start] if at >= start else earlier[at]
        if not _pi_time(other) or other > mine:
            return False
    return True


class SessionIndex:
    """Entries in file order, by id, labels, the name and the leaf.

    Everything here is derived from the file and rebuilt by scanning it (or from a
    sidecar that was checked against it); nothing is written back. Duplicate ids:
    the later line wins in lookups (as pi).
    """

    def __init__(self) -> None:
        self._ids: list[str] | None = []  # entry id by seq (None: not yet made from a sidecar)
        self._timestamps: list[Any] | None = []  # `timestamp` as found (any JSON value; None when absent)
        self._make: dict[str, Callable[[], list[Any]]] = {}  # how to make the lists above, when None
        self.parents = array("i")  # seq of the parent as resolved when the entry arrived, ROOT or MISSING
        self.offsets = array("q")  # byte offset of each line
        self.lengths = array("q")  # bytes of each line without its line end
        self.kinds = Codes()  # (type, message role or None)
        self.settings = SparseCodes()  # Node.setting, for the entries that have one
        # Anchors: per entry, a record of the nearest thinking change, model setter and compaction on
        # the path from the root to it (itself included), or UNANCHORED. Entries that change none of
        # them share their parent's record.
        self.anchor = array("i")
        self.records = array("i", [-1, -1, -1])  # three seqs (or -1) per record; record 0: a root's
        self.orphans: dict[int, str] = {}  # seq -> its parent id, not in the file (yet)
        self._waiting: dict[str, list[int]] = {}  # the same, by parent id
        self.labels: dict[str, tuple[Any, Any]] = {}  # target id -> (label, label entry timestamp)
        self.raw_name: Any = None
        self.leaf_id: str | None = None
        self.anchors_hold = True  # false once an id repeats: a later line may change an earlier path
        # The seqs whose parents column is not seq - 1 (and the first entry), ascending, for the
        # entries before `_jumps_to`: where the tree departs from file order (see tree/folded.py).
        self._jumps: list[int] = []
        self._jumps_to = 0
        # Those jumps by the parent they had on arrival (its jump children, ascending), those that
        # had none (a root, a parent not in the file yet), and whether a parent came after its
        # child (an orphan adopted before its jump was listed).
        self._branches: dict[int, list[int]] = {}
        self._unparented: list[int] = []
        self._parent_later = False
        # Whether every jump listed is stamped as pi stamps a time and no earlier than each sibling
        # before it in the file, also so stamped: then siblings in file order are in time order.
        self._siblings_in_order = True
        self._filed = 0  # how many of the jumps are filed so (the first ones)
        self._by_id: dict[str, int] | None = {}  # None: not yet made (after a sidecar load)
        self._setters: list[int] = []  # per kinds code, what an anchor record it changes (-1: none)

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def version(self) -> int:
        """Counts additions (entries are only ever added), so derived views know when to rebuild."""
        return len(self.offsets)

    def defer(self, **make: Callable[[], list[Any]]) -> None:
        """Make these lists (`ids`, `timestamps`) and the id map when first read (after a sidecar load)."""
        self._make.update(make)
        self._ids = self._timestamps = self._by_id = None

    @property
    def ids(self) -> list[str]:
        if self._ids is None:
            self._ids = _long_lived(self._make.pop("ids")())
        return self._ids

    @property
    def timestamps(self) -> list[Any]:
        if self._timestamps is None:
            self._timestamps = _long_lived(self._make.pop("timestamps")())
        return self._timestamps

    # ------------------------------------------------------------------ lookups

    @property
    def by_id(self) -> dict[str, int]:
        """Entry id -> seq of the last line with that id."""
        if self._by_id is None:
            self._by_id = _long_lived(dict(zip(self.ids, range(len(self)), strict=True)))
        return self._by_id

    def seq_of(self, entry_id: str) -> int | None:
        return self.by_id.get(entry_id)

    def get(self, entry_id: str) -> Node | None:
        seq = self.by_id.get(entry_id)
        return None if seq is None else self.node(seq)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.by_id

    def node(self, seq: int) -> Node:
        type_, role = self.kinds.values[self.kinds.codes[seq]]
        return Node(
            self.ids[seq],
            self.parent_id(seq),
            type_,
            self.timestamps[seq],
            self.offsets[seq],
            self.lengths[seq],
            seq,
            role,
            self.settings.get(seq),
        )

    @property
    def nodes(self) -> NodeView:
        return NodeView(self)

    def type_of(self, seq: int) -> str:
        kind: str = self.kinds.values[self.kinds.codes[seq]][0]
        return kind

    def parent_id(self, seq: int) -> str | None:
        parent = self.parents[seq]
        if parent >= 0:
            return self.ids[parent]
        return None if parent == ROOT else self.orphans[seq]

    def parent_seq(self, seq: int) -> int | None:
        """The parent's seq by id, as pi looks it up (the latest line with the parent's id)."""
        parent = self.parents[seq]
        if parent == ROOT:
            return None
        if parent >= 0 and self.anchors_hold:  # no id repeats: the seq found on arrival still holds
            return parent
        parent_id = self.parent_id(seq)
        return self.by_id.get(parent_id) if parent_id else None  # pi's walk stops at a "" parent

    def parent(self, node: Node) -> Node | None:
        seq = self.parent_seq(node.seq)
        return None if seq is None else self.node(seq)

    def walk(self, seq: int) -> tuple[list[int], int | None]:
        """The seqs from the root down to `seq`, and where a parent chain that repeats was cut
        (the seq met again), if it was."""
        path: list[int] = []
        seen: set[int] = set()
        parents, parent_seq, fast = self.parents, self.parent_seq, self.anchors_hold
        current: int | None = seq
        while current is not None:
            if current in seen:
                path.reverse()
                return path, current
            seen.add(current)
            path.append(current)
            if fast:  # no id repeats: the parents column holds (a MISSING parent never arrived)
                parent = parents[current]
                current = parent if parent >= 0 else None
            else:
                current = parent_seq(current)
        path.reverse()
        return path, None

    def anchors(self, seq: int) -> Anchors | None:
        """The leaf's anchors, None if its path was not whole when it arrived."""
        record = self.anchor[seq]
        if record == UNANCHORED:
            return None
        found = self.records[3 * record : 3 * record + 3]
        return tuple(None if at < 0 else self.node(at) for at in found)  # type: ignore[return-value]

    @property
    def name(self) -> str | None:
        """pi 0.73: the newest session_info wins; a blank name clears it."""
        return js_trim(self.raw_name) or None if isinstance(self.raw_name, str) else None

    @property
    def cursor(self) -> str | None:
        """The id of the last entry in file order: where a follower resumes."""
        return self.ids[-1] if len(self) else None

    # ------------------------------------------------------------------ adding

    def add(self, node: Node, line: int, warnings: list[FileWarning], follow_leaf: bool = False) -> None:
        """Index one entry. `follow_leaf`: move the leaf only when `node` continues it."""
        leaf = self.leaf_id
        if not self._add_one(node, line, warnings):
            self.add_all([node], [line], warnings)
        if follow_leaf and node.parent_id != leaf:
            self.leaf_id = leaf

    def _add_one(self, node: Node, line: int, warnings: list[FileWarning]) -> bool:
        """`add_all` of one entry in the usual case (what an append writes): a new id no orphan
        waits for, its parent already here or none. Without the columns' machinery, which costs
        more than the entry for one line. False (nothing added) in any other case."""
        by_id, entry_id, parent_id = self._by_id, node.id, node.parent_id
        if by_id is None or self._make or entry_id in by_id or (self._waiting and entry_id in self._waiting):
            return False
        seq = len(self.offsets)
        parent = ROOT if parent_id is None else by_id.get(parent_id, MISSING) if parent_id else MISSING
        if parent == MISSING:
            return False
        kind = (node.type, node.role)
        code = self.kinds.plain.get(kind) or self.kinds.code_of((sys.intern(kind[0]), kind[1] and sys.intern(kind[1])))
        record = self.anchor[parent] if parent >= 0 else 0
        setter = self._setters_by_code()[code]
        if setter >= 0 and record != UNANCHORED:
            records = self.records
            changed = records[3 * record : 3 * record + 3]
            changed[setter] = seq
            records.extend(changed)
            record = len(records) // 3 - 1
        self.anchor.append(record)
        self.parents.append(parent)
        if self._jumps_to == seq:
            if seq == 0 or parent != seq - 1:
                self._jumps.append(seq)
            self._jumps_to = seq + 1
        by_id[entry_id] = seq
        self._ids.append(entry_id)  # type: ignore[union-attr]  # made: `_make` is empty
        self._timestamps.append(node.timestamp)  # type: ignore[union-attr]
        self.offsets.append(node.offset)
        self.lengths.append(node.length)
        self.kinds.codes.append(code)
        setting = node.setting
        if setting is not None:
            self.settings.put_all([(seq, setting)])
        if node.type in _NAMING:
            self._apply_setting(node.type, entry_id, setting, node.timestamp, line, warnings, seq)
        self.leaf_id = entry_id
        return True

    def add_all(self, nodes: list[Node], lines: Sequence[int], warnings: list[FileWarning]) -> None:
        """Index entries in file order (`lines`: their line numbers), the leaf moving to the last."""
        if not nodes:
            return
        self.add_columns(
            [node.id for node in nodes],
            [node.parent_id for node in nodes],
            [(node.type, node.role) for node in nodes],
            [node.timestamp for node in nodes],
            [node.offset for node in nodes],
            [node.length for node in nodes],
            [(position, node.setting) for position, node in enumerate(nodes) if node.setting is not None],
            lines,
            warnings,
        )

    def add_columns(
        self,
        ids: list[str],
        parent_ids: list[str | None],
        kinds: list[tuple[str, str | None]],
        timestamps: list[Any],
        offsets: Sequence[int],
        lengths: Sequence[int],
        settings: list[tuple[int, Any]],
        lines: Sequence[int],
        warnings: list[FileWarning],
    ) -> None:
        """Index entries given as columns (what their `Node`s hold; `settings`: (position, setting)
        for the entries that have one, in order), the leaf moving to the last."""
        self.add_coded(
            ids,
            parent_ids,
            self.kinds_codes(kinds),
            timestamps,
            offsets,
            lengths,
            [at for at, _ in settings],
            self.settings.coded.codes_of([setting for _, setting in settings]),
            lines,
            warnings,
        )

    def add_block(self, block: BlockColumns, lines: Sequence[int], warnings: list[FileWarning]) -> None:
        """`add_columns` of a block a scan worker decoded: its tables' codes made this index's."""
        kinds = self.kinds_codes(block.kinds)
        settings = self.settings.coded.codes_of(block.settings)
        setting_codes = settings if block.setting_codes is None else list(map(settings.__getitem__, block.setting_codes))
        self.add_coded(
            block.ids,
            block.parents,
            list(map(kinds.__getitem__, block.kind_codes)),
            block.timestamps,
            block.offsets,
            block.lengths,
            block.setting_at,
            setting_codes,
            lines,
            warnings,
        )

    def kinds_codes(self, kinds: list[tuple[str, str | None]]) -> list[int]:
        """The kinds column's codes of these (type, role) pairs, made where new."""
        plain, code_of, intern = self.kinds.plain, self.kinds.code_of, sys.intern
        return [plain.get(key) or code_of((intern(key[0]), key[1] and intern(key[1]))) for key in kinds]

    def add_coded(
        self,
        ids: list[str],
        parent_ids: list[str | None],
        codes: list[int],
        timestamps: list[Any],
        offsets: Sequence[int],
        lengths: Sequence[int],
        setting_at: Sequence[int],
        setting_codes: Sequence[int],
        lines: Sequence[int],
        warnings: list[FileWarning],
    ) -> None:
        """`add_columns` with the kinds as this index's codes, and the settings as positions among
        these entries with codes of `self.settings.coded`: what must look back (ids, parents,
        anchors, labels) in one loop, the other columns gathered."""
        count = len(ids)
        if not count:
            return
        by_id = self._by_id
        if by_id is None or self._make:
            by_id = self._make_all()
        start = len(self.offsets)
        naming = self._naming_codes()
        named = None
        if not naming.isdisjoint(codes):
            values = self.settings.coded.values
            named = {at: values[code] for at, code in zip(setting_at, setting_codes, strict=True)}
        if not self._add_simply(ids, parent_ids, codes, start, by_id, timestamps):
            self._add_one_by_one(ids, parent_ids, timestamps, codes, named, naming, start, lines, warnings)
        elif named is not None:
            types = self.kinds.values
            for at in [at for at, code in enumerate(codes) if code in naming]:
                self._apply_setting(types[codes[at]][0], ids[at], named.get(at), timestamps[at], lines[at], warnings, start + at)
        self._ids.extend(ids)  # type: ignore[union-attr]
        self._timestamps.extend(timestamps)  # type: ignore[union-attr]
        self.offsets.extend(offsets)
        self.lengths.extend(lengths)
        self.kinds.codes.extend(codes)
        self.settings.put_coded([start + at for at in setting_at], setting_codes)
        self.leaf_id = ids[-1]

    def _add_simply(
        self, ids: list[str], parent_ids: list[str | None], codes: list[int], start: int, by_id: dict[str, int], timestamps: list[Any]
    ) -> bool:
        """The usual case, without a look back per entry: no id repeats, every parent is found
        before its child (or is missing from the whole file so far), no orphan waits for one of
        these ids. Adds ids and parents to the columns and the anchors; False (nothing added)
        when the case is not the usual one."""
        count = len(ids)
        if self._waiting:
            return False
        seqs = range(start, start + count)
        # One look at the (big) map per id: each new id goes in; one already there (or repeated
        # here) keeps its seq, which tells the case is not the usual one.
        placed = list(map(by_id.setdefault, ids, seqs))
        if placed != list(seqs):
            self._forget([entry_id for entry_id, seq, at in zip(ids, seqs, placed, strict=True) if seq == at], by_id)
            return False
        # Most parents are the line before: found without a lookup in the map (the latest line
        # with an id is the one the map holds, and the line before is the latest there is).
        get = by_id.get
        before = [self._ids[-1] if start else None, *ids[:-1]]  # type: ignore[index]  # made: add_columns saw to it
        found = [
            seq - 1 if parent == previous and parent else ROOT if parent is None else get(parent, MISSING) if parent else MISSING
            for seq, parent, previous in zip(seqs, parent_ids, before, strict=True)
        ]
        steps = list(map(sub, found, range(start - 1, start + count - 1)))  # 0: the parent is the line before
        if max(steps) > 0:  # a parent that comes later, or itself
            self._forget(ids, by_id)
            return False
        if MISSING in found:
            for seq, parent in enumerate(found, start):
                if parent == MISSING:
                    self._note_orphan(seq, parent_ids[seq - start])  # type: ignore[arg-type]
        self.parents.extend(found)
        self._note_jumps(start, steps, timestamps)
        self._anchor_all(found, codes, start)
        return True

    @staticmethod
    def _forget(ids: list[str], by_id: dict[str, int]) -> None:
        for entry_id in ids:
            by_id.pop(entry_id, None)

    def _anchor_all(self, found: list[int], codes: list[int], start: int) -> None:
        """Anchor records of entries whose parents (`found`) come before them."""
        anchor, records, setters = self.anchor, self.records, self._setters_by_code()
        for seq, parent, code in zip(range(start, start + len(found)), found, codes, strict=True):
            record = anchor[parent] if parent >= 0 else 0 if parent == ROOT else UNANCHORED
            setter = setters[code]
            if setter >= 0 and record != UNANCHORED:
                changed = records[3 * record : 3 * record + 3]
                changed[setter] = seq
                records.extend(changed)
                record = len(records) // 3 - 1
            anchor.append(record)

    def _add_one_by_one(
        self,
        ids: list[str],
        parent_ids: list[str | None],
        timestamps: list[Any],
        codes: list[int],
        named: dict[int, Any] | None,
        naming: frozenset[int],
        start: int,
        lines: Sequence[int],
        warnings: list[FileWarning],
    ) -> None:
        """Ids, parents and anchors entry by entry, each looking back at those before it."""
        by_id, count = self.by_id, len(ids)
        anchor, records, parents, setters, waiting = self.anchor, self.records, self.parents, self._setters_by_code(), self._waiting
        for seq, entry_id, parent_id, code in zip(range(start, start + count), ids, parent_ids, codes, strict=True):
            if entry_id in by_id:
                self._note_duplicate(entry_id, lines[seq - start], warnings)
            parent = ROOT if parent_id is None else by_id.get(parent_id, MISSING) if parent_id else MISSING
            if parent == MISSING:
                self._note_orphan(seq, parent_id)  # type: ignore[arg-type]
            parents.append(parent)
            record = anchor[parent] if parent >= 0 else 0 if parent == ROOT else UNANCHORED
            if record != UNANCHORED and setters[code] >= 0:
                found = records[3 * record : 3 * record + 3]
                found[setters[code]] = seq
                records.extend(found)
                record = len(records) // 3 - 1
            anchor.append(record)
            if waiting and entry_id in waiting:
                self._adopt_orphans(entry_id, seq)
            by_id[entry_id] = seq
            if named is not None and code in naming:
                at = seq - start
                self._apply_setting(self.kinds.values[code][0], entry_id, named.get(at), timestamps[at], lines[at], warnings)
        self._note_jumps(start, map(sub, parents[start:], range(start - 1, start + count - 1)), timestamps)

    def _note_jumps(self, start: int, steps: Iterable[int], stamps: list[Any]) -> None:
        """Extend the jumps with entries `start`.. (`steps`: each one's parents column minus
        (seq - 1); `stamps`: their timestamps), when those before are listed. A parent adopted
        later stays a jump (it was MISSING, it becomes a later line)."""
        if self._jumps_to != start:
            return
        steps = list(steps)
        found = list(compress(range(start, start + len(steps)), steps))
        if start == 0 and steps and not steps[0]:  # the first entry is a root: ROOT is -1 as well
            found.insert(0, 0)
        self._jumps.extend(found)
        self._jumps_to = start + len(steps)
        if self._filed == len(self._jumps) - len(found):  # those before are filed: these now, their times at hand
            self._file(found, stamps, start)

    def _file(self, found: list[int], stamps: list[Any], start: int) -> None:
        """File the jumps `found` (the next after those filed) by their parent, and check their
        times against their siblings' (`stamps`: the times of the entries from `start`)."""
        self._filed += len(found)
        branches, parents = self._branches, self.parents
        for seq in found:  # a few per thousand entries
            parent = parents[seq]
            if parent < 0 or parent == seq:
                self._unparented.append(seq)
                continue
            kids = branches.get(parent)
            if parent > seq:
                self._parent_later = True
            elif self._siblings_in_order:  # its siblings so far: the line after the parent, and earlier jumps
                before = [*([parent + 1] if parents[parent + 1] == parent else ()), *(kids or ())]
                self._siblings_in_order = _no_earlier(seq, before, stamps, start, self.timestamps)
            if kids is None:
                branches[parent] = [seq]
            else:
                kids.append(seq)

    def jumps(self) -> list[int]:
        """The seqs whose parent is not the line before them, and the first entry, ascending (the
        list grows as entries are added). Kept as entries arrive; after a sidecar load, found
        from the parents column on first use."""
        count = len(self)
        if self._jumps_to < count:
            start = self._jumps_to
            self._note_jumps(start, map(sub, self.parents[start:count], range(start - 1, count - 1)), self.timestamps[start:count])
        return self._jumps

    def jump_parents(self) -> tuple[dict[int, list[int]], list[int], bool]:
        """The jumps (`jumps`) by their parent as the parents column had it when they were listed:
        parent seq -> its jump children, ascending (not to be changed); the jumps that had no
        parent then (a root, a parent not yet in the file, which may have arrived since); and
        whether any listed parent comes after its child. Kept with the jumps."""
        self._file_all()
        return self._branches, self._unparented, self._parent_later

    def siblings_in_time_order(self) -> bool:
        """Whether every entry's children in file order are in time order as pi sorts them (each
        stamped as pi stamps a time, which compare as text as they do as times, and none earlier
        than a sibling before it), as far as the parents column tells them (`jump_parents`).
        Checked for each jump as it is listed."""
        self._file_all()
        return self._siblings_in_order

    def _file_all(self) -> None:
        """File the jumps listed but not filed: none, unless jumps were listed without their times."""
        jumps = self.jumps()
        if self._filed < len(jumps):
            self._file(jumps[self._filed :], self.timestamps, 0)

    def _naming_codes(self) -> frozenset[int]:
        """The kinds codes of entries that change labels or the name."""
        return frozenset(code for code, kind in enumerate(self.kinds.values) if kind is not None and kind[0] in _NAMING)

    def _setters_by_code(self) -> list[int]:
        """Per kinds code, the position of an anchor record its entries set (-1: none)."""
        if len(self._setters) != len(self.kinds.values):
            self._setters = [_setter_of(kind) for kind in self.kinds.values]
        return self._setters

    def _apply_setting(
        self,
        type_: str,
        entry_id: str,
        setting: Any,
        timestamp: Any,
        line: int,
        warnings: list[FileWarning],
        seq: int | None = None,
    ) -> None:
        """A label or a name, as it applies after the entries before it (`seq`: where it is, when
        the entries after it are already in `by_id`)."""
        if type_ == "label":
            self._apply_label(entry_id, setting, timestamp, line, warnings, seq)
        else:
            self.raw_name = setting

    def _make_all(self) -> dict[str, int]:
        self.ids, self.timestamps  # noqa: B018 (made on first read)
        return self.by_id

    def extend_path(self, source: SessionIndex, seqs: list[int], offsets: list[int]) -> bool:
        """Add copies of `source`'s entries `seqs`, their lines written at `offsets`: a stretch of
        one path, each entry the child of the one before it, the first the child of this index's
        last entry (as in a fork). Columns are gathered, not rebuilt line by line. This index must
        share `source`'s tables (`sharing_tables`); a path's ids are distinct and new here. False
        (and nothing added) when an entry already here waits for one of them as its parent (a cut
        cycle): add those line by line."""
        start, count = len(self), len(seqs)
        assert start > 0 and self.kinds.values[: len(source.kinds.values)] == source.kinds.values
        source_ids, stamps, lengths, codes = source.ids, source.timestamps, source.lengths, source.kinds.codes
        ids = [source_ids[seq] for seq in seqs]
        if self._waiting and not self._waiting.keys().isdisjoint(ids):
            return False
        new_codes = [codes[seq] for seq in seqs]
        self.ids.extend(ids)
        copied = [stamps[seq] for seq in seqs]
        self.timestamps.extend(copied)
        self.lengths.extend([lengths[seq] for seq in seqs])
        self.offsets.extend(offsets)
        self.parents.extend(range(start - 1, start + count - 1))
        self._note_jumps(start, [0] * count, copied)
        self.kinds.codes.extend(new_codes)
        self._copy_settings(source, seqs, start)
        self._anchor_chain(start, new_codes)
        self.by_id.update(zip(ids, range(start, start + count), strict=True))
        self.leaf_id = ids[-1]
        return True

    def _copy_settings(self, source: SessionIndex, seqs: list[int], start: int) -> None:
        wanted = set(seqs)
        found = {seq: code for seq, code in source.settings.between(min(seqs), max(seqs)) if seq in wanted}
        if not found:
            return
        placed = [(position, found[seq]) for position, seq in enumerate(seqs, start) if seq in found]
        self.settings.positions.extend(position for position, _ in placed)
        self.settings.coded.codes.extend(code for _, code in placed)
        names = {code for code, kind in enumerate(self.kinds.values) if kind is not None and kind[0] == "session_info"}
        kinds = self.kinds.codes
        named = [code for position, code in placed if kinds[position] in names]
        if named:  # the newest session_info on the path names the session
            self.raw_name = self.settings.coded.values[named[-1]]

    def _anchor_chain(self, start: int, codes: Sequence[int]) -> None:
        """Anchor records for a chain below entry `start - 1`: each setter makes a new record, every
        other entry shares the record of the setter (or the parent) before it."""
        setters, records = self._setters_by_code(), self.records
        record = self.anchor[start - 1]
        marks = [setters[code] >= 0 for code in codes]
        if record == UNANCHORED or not any(marks):
            self.anchor.extend(array("i", [record]) * len(codes))
            return
        first_new = len(records) // 3
        found = list(records[3 * record : 3 * record + 3])
        made: list[int] = []
        for at in [at for at, mark in enumerate(marks) if mark]:
            found[setters[codes[at]]] = start + at
            made += found
        records.extend(made)
        self.anchor.extend(first_new + made_so_far - 1 if made_so_far else record for made_so_far in accumulate(marks))

    @classmethod
    def sharing_tables(cls, source: SessionIndex) -> SessionIndex:
        """An empty index whose coded columns start with `source`'s tables (see `extend_path`)."""
        index = cls()
        index.kinds = Codes(list(source.kinds.values))
        index.settings = SparseCodes(coded=Codes(list(source.settings.coded.values)))
        return index

    def _note_duplicate(self, entry_id: str, line: int, warnings: list[FileWarning]) -> None:
        self.anchors_hold = False
        warnings.append(
            FileWarning(
                "duplicate-id",
                f"entry id {entry_id} appears again on line {line}; the later line wins",
                line=line,
                entry_id=entry_id,
            )
        )

    def _note_orphan(self, seq: int, parent_id: str) -> None:
        self.orphans[seq] = parent_id
        if parent_id:  # pi's walk stops at a "" parent: nothing waits for it
            self._waiting.setdefault(parent_id, []).append(seq)

    def _adopt_orphans(self, entry_id: str, seq: int) -> None:
        """A parent turned up after its children: they resolve to it from now on (unanchored)."""
        for child in self._waiting.pop(entry_id):
            self.parents[child] = seq
            del self.orphans[child]

    def restore_waiting(self) -> None:
        """Rebuild the orphans-by-parent map (after a sidecar load)."""
        self._waiting = {}
        for seq, parent_id in self.orphans.items():
            if parent_id:
                self._waiting.setdefault(parent_id, []).append(seq)

    def _apply_label(
        self, entry_id: str, setting: Any, timestamp: Any, line: int, warnings: list[FileWarning], seq: int | None = None
    ) -> None:
        target, label = setting
        known = isinstance(target, str) and target in self.by_id and (seq is None or self.by_id[target] <= seq)
        if not known:
            warnings.append(
                FileWarning(
                    "label-unknown-target",
                    f"label entry {entry_id} on line {line} targets unknown entry {target}",
                    line=line,
                    entry_id=entry_id,
                )
            )
        if not isinstance(target, str):
            return
        if label:
            self.labels[target] = (label, timestamp)
        else:
            self.labels.pop(target, None)


class NodeView(Sequence[Node]):
    """The entries in file order as Nodes, made as they are read."""

    def __init__(self, index: SessionIndex) -> None:
        self._index = index  # not `index`: that is Sequence's method

    def __len__(self) -> int:
        return len(self._index)

    @overload
    def __getitem__(self, position: int) -> Node: ...
    @overload
    def __getitem__(self, position: slice) -> list[Node]: ...
    def __getitem__(self, position: int | slice) -> Node | list[Node]:
        if isinstance(position, slice):
            return [self._index.node(seq) for seq in range(len(self._index))[position]]
        if position < 0:
            position += len(self._index)
        if not 0 <= position < len(self._index):
            raise IndexError(position)
        return self._index.node(position)

    def __iter__(self) -> Iterator[Node]:
        node = self._index.node
        return (node(seq) for seq in range(len(self._index)))
