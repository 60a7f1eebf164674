"""pi's `getTree`, flattened depth-first, without recursion and without hanging on cycles."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..entries import Node, iso_to_ms
from ..protocol import TreeNode, Warning
from ..store import SessionIndex

Preview = Callable[[Node], str | None]
_NO_TIME = float("-inf")  # JavaScript compares NaN as "not less": such entries stay near the front


def _sort_key(node: Node) -> float:
    ms = iso_to_ms(node.timestamp)
    return _NO_TIME if ms is None else ms


def _forest(index: SessionIndex) -> tuple[list[Node], dict[str, list[Node]]]:
    """Roots in file order and children per parent, each entry id once (the later line wins)."""
    roots: list[Node] = []
    children: dict[str, list[Node]] = {}
    by_id = index.by_id
    for node in index.nodes:
        if by_id[node.id] != node.seq:
            continue  # shadowed by a later line with the same id
        parent = node.parent_id
        if parent is None or parent == node.id or parent not in by_id:
            roots.append(node)
        else:
            children.setdefault(parent, []).append(node)
    for siblings in children.values():
        if len(siblings) > 1:  # most entries have one child: nothing to sort, no timestamps to parse
            siblings.sort(key=_sort_key)  # stable: equal timestamps keep file order
    return roots, children


def _depth_first(roots: list[Node], children: dict[str, list[Node]], seen: set[str]) -> Iterator[tuple[Node, int]]:
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        if node.id in seen:
            continue
        seen.add(node.id)
        yield node, depth
        for child in reversed(children.get(node.id, ())):
            stack.append((child, depth + 1))


def flat_tree(index: SessionIndex, preview: Preview, warnings: list[Warning]) -> list[TreeNode]:
    """Every entry once, in pi's getTree order; entries on a parent cycle follow as extra roots."""
    roots, children = _forest(index)
    seen: set[str] = set()
    nodes = [_tree_node(node, depth, index, children, preview) for node, depth in _depth_first(roots, children, seen)]
    for node in index.nodes:
        if node.id in seen or index.by_id[node.id] != node.seq:
            continue
        warnings.append(Warning("cycle", f"entry {node.id} is on a parent cycle; shown as a root", entry_id=node.id))
        nodes.extend(
            _tree_node(n, depth, index, children, preview) for n, depth in _depth_first([node], children, seen)
        )
    return nodes


def _tree_node(
    node: Node, depth: int, index: SessionIndex, children: dict[str, list[Node]], preview: Preview
) -> TreeNode:
    label, label_timestamp = index.labels.get(node.id, (None, None))
    return TreeNode(
        id=node.id,
        parent_id=node.parent_id,
        type=node.type,
        timestamp=node.timestamp,
        depth=depth,
        child_count=len(children.get(node.id, ())),
        label=label,
        label_timestamp=label_timestamp,
        role=node.role,
        preview=preview(node),
    )
