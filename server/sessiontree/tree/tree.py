"""pi's `getTree`, flattened depth-first, without recursion and without hanging on cycles.

Works on the index's columns by entry position (seq): no Node is made per entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..entries import iso_to_ms
from ..file_warning import FileWarning
from ..store import SessionIndex
from ..tree_nodes import TreeNode

Preview = Callable[[int], str | None]  # the preview of the entry at a seq
_NO_TIME = float("-inf")  # JavaScript compares NaN as "not less": such entries stay near the front


def _parents(index: SessionIndex) -> list[int | None]:
    """Each entry's parent seq as pi's byId map finds it; None for a root (a null, missing or own
    parent) and for a line shadowed by a later one with the same id (it is not in the tree)."""
    count = len(index)
    if index.anchors_hold:  # no id repeats: the parents column holds (ROOT, MISSING: roots)
        found: list[int | None] = [parent if parent >= 0 and parent != seq else None for seq, parent in enumerate(index.parents)]
        for seq, orphan_of in index.orphans.items():  # only a "" parent can be in the file and unresolved
            parent = index.by_id.get(orphan_of)
            found[seq] = parent if parent is not None and parent != seq else None
        return found
    by_id, ids = index.by_id, index.ids
    found = []
    for seq in range(count):
        parent_id = index.parent_id(seq)
        parent = by_id.get(parent_id) if parent_id is not None else None
        found.append(None if by_id[ids[seq]] != seq or parent_id == ids[seq] else parent)
    return found


def _forest(index: SessionIndex, parents: list[int | None]) -> tuple[list[int], dict[int, list[int]]]:
    """Roots in file order and children per parent, each entry id once (the later line wins)."""
    roots: list[int] = []
    children: dict[int, list[int]] = {}
    shadowed = not index.anchors_hold
    by_id, ids = index.by_id, index.ids
    for seq, parent in enumerate(parents):
        if parent is not None:
            if parent in children:
                children[parent].append(seq)
            else:
                children[parent] = [seq]
        elif not shadowed or by_id[ids[seq]] == seq:
            roots.append(seq)
    stamps = index.timestamps
    for siblings in children.values():
        if len(siblings) > 1:  # most entries have one child: nothing to sort, no timestamps to parse
            siblings.sort(key=lambda seq: _ms(stamps[seq]))  # stable: equal timestamps keep file order
    return roots, children


def _ms(timestamp: object) -> float:
    ms = iso_to_ms(timestamp)
    return _NO_TIME if ms is None else ms


def _depth_first(roots: list[int], children: dict[int, list[int]], seen: set[int]) -> Iterator[tuple[int, int]]:
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        seq, depth = stack.pop()
        if seq in seen:
            continue
        seen.add(seq)
        yield seq, depth
        below = children.get(seq)
        if below:
            stack.extend((child, depth + 1) for child in reversed(below))


def flat_tree(index: SessionIndex, preview: Preview, warnings: list[FileWarning]) -> list[TreeNode]:
    """Every entry once, in pi's getTree order; entries on a parent cycle follow as extra roots."""
    parents = _parents(index)
    roots, children = _forest(index, parents)
    seen: set[int] = set()
    make = _node_maker(index, children, preview)
    nodes = [make(seq, depth) for seq, depth in _depth_first(roots, children, seen)]
    if len(seen) < len(index):
        by_id, ids = index.by_id, index.ids
        for seq in range(len(index)):
            if seq in seen or by_id[ids[seq]] != seq:
                continue
            warnings.append(
                FileWarning("cycle", f"entry {ids[seq]} is on a parent cycle; shown as a root", entry_id=ids[seq])
            )
            nodes.extend(make(s, depth) for s, depth in _depth_first([seq], children, seen))
    return nodes


def _node_maker(index: SessionIndex, children: dict[int, list[int]], preview: Preview) -> Callable[[int, int], TreeNode]:
    ids, stamps, labels = index.ids, index.timestamps, index.labels
    kinds, codes = index.kinds.values, index.kinds.codes
    parent_id = index.parent_id
    no_label = (None, None)

    def make(seq: int, depth: int) -> TreeNode:
        entry_id = ids[seq]
        label, label_timestamp = labels.get(entry_id, no_label)
        type_, role = kinds[codes[seq]]
        below = children.get(seq)
        # id, parent_id, type, timestamp, depth, child_count, label, label_timestamp, role, preview
        return TreeNode(
            entry_id,
            parent_id(seq),
            type_,
            stamps[seq],
            depth,
            len(below) if below else 0,
            label,
            label_timestamp,
            role,
            preview(seq),
        )

    return make


def tree_wire(nodes: list[TreeNode]) -> list[dict[str, Any]]:
    """The nodes as the protocol's converter writes them (camelCase; label, labelTimestamp, role
    and preview left out when None), without its per-node walk."""
    wire: list[dict[str, Any]] = []
    append = wire.append
    for node in nodes:
        item = {
            "id": node.id,
            "parentId": node.parent_id,
            "type": node.type,
            "timestamp": node.timestamp,
            "depth": node.depth,
            "childCount": node.child_count,
        }
        if node.label is not None:
            item["label"] = node.label
        if node.label_timestamp is not None:
            item["labelTimestamp"] = node.label_timestamp
        if node.role is not None:
            item["role"] = node.role
        if node.preview is not None:
            item["preview"] = node.preview
        append(item)
    return wire
