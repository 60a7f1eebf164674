"""pi's getTree order, flattened, and its behaviour on damaged trees."""

from __future__ import annotations

from typing import Any

from sessiontree.file_warning import FileWarning
from sessiontree.store import MemoryStorage, Session
from sessiontree.tree import flat_tree
from support.messages import assistant, line, ts, user
from support.sessions import session_bytes


def _tree(*entries: dict[str, Any], data: bytes | None = None) -> tuple[list[Any], list[FileWarning]]:
    session = Session.load(MemoryStorage(data or session_bytes(*entries)))
    warnings: list[FileWarning] = []
    return flat_tree(session.index, lambda node: None, warnings), warnings


def _shape(nodes: list[Any]) -> list[tuple[str, int]]:
    return [(n.id, n.depth) for n in nodes]


def test_children_are_ordered_by_timestamp_oldest_first_depth_first() -> None:
    nodes, _ = _tree(
        user("a", None, "root", 1),
        user("late", "a", "x", 9),
        user("early", "a", "y", 3),
        user("child", "early", "z", 4),
        user("same1", "a", "t", 5),
        user("same2", "a", "t", 5),
    )
    assert _shape(nodes) == [("a", 0), ("early", 1), ("child", 2), ("same1", 1), ("same2", 1), ("late", 1)]
    assert nodes[0].child_count == 4


def test_roots_keep_file_order_and_orphans_and_self_parents_are_roots() -> None:
    nodes, _ = _tree(
        user("r2", None, "a", 9),
        user("orphan", "missing", "b", 1),
        user("r1", None, "c", 2),
        user("self", "self", "d", 3),
    )
    assert _shape(nodes) == [("r2", 0), ("orphan", 0), ("r1", 0), ("self", 0)]


def test_labels_resolve_onto_nodes_latest_wins_and_empty_clears() -> None:
    nodes, _ = _tree(
        user("a", None, "q", 1),
        assistant("b", "a", "x", 2),
        {"type": "label", "id": "l1", "parentId": "b", "timestamp": ts(3), "targetId": "a", "label": "one"},
        {"type": "label", "id": "l2", "parentId": "l1", "timestamp": ts(4), "targetId": "b", "label": "gone"},
        {"type": "label", "id": "l3", "parentId": "l2", "timestamp": ts(5), "targetId": "b", "label": ""},
        {"type": "label", "id": "l4", "parentId": "l3", "timestamp": ts(6), "targetId": "a", "label": "two"},
    )
    by_id = {n.id: n for n in nodes}
    assert (by_id["a"].label, by_id["a"].label_timestamp) == ("two", ts(6))
    assert by_id["b"].label is None and by_id["b"].label_timestamp is None


def test_a_duplicate_id_is_shown_once() -> None:
    data = session_bytes(user("a", None, "q", 1), user("b", "a", "x", 2)) + line(user("b", "a", "x", 2))
    nodes, _ = _tree(data=data)
    assert _shape(nodes) == [("a", 0), ("b", 1)]


def test_entries_on_a_cycle_are_listed_with_a_warning() -> None:
    nodes, warnings = _tree(user("a", None, "q", 1), user("b", "c", "x", 2), user("c", "b", "y", 3), user("d", "c", "z", 4))
    assert _shape(nodes) == [("a", 0), ("b", 0), ("c", 1), ("d", 2)]
    assert [w.kind for w in warnings] == ["cycle"]


def test_a_100000_deep_linear_session_needs_no_recursion() -> None:
    entries = [user(f"{i:08x}", f"{i - 1:08x}" if i else None, "m", i % 3000) for i in range(100_000)]
    nodes, _ = _tree(*entries)
    assert len(nodes) == 100_000
    assert nodes[-1].depth == 99_999
