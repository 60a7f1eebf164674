"""One check for "this session is indexed as a scan of its file would index it"."""

from __future__ import annotations

from sessiontree.store import Session
from sessiontree.store.sidecar import SCAN_WARNINGS
from sessiontree.tree import build_context, flat_tree


def assert_indexed_alike(mine: Session, scan: Session) -> None:
    """Everything a client can see agrees: entries, lookups, labels, name, leaf, warnings that
    describe the file, contexts (a sample of entries, the path's cost grows with depth) and the tree."""
    a, b = mine.index, scan.index
    assert mine.header == scan.header
    assert list(a.nodes) == list(b.nodes)
    assert a.by_id == b.by_id
    departs = [seq for seq in range(len(b)) if seq == 0 or b.parents[seq] != seq - 1]
    assert a.jumps() == b.jumps() == departs  # kept as entries arrive, or found after a sidecar load
    assert (a.labels, a.name, a.leaf_id, a.cursor, a.anchors_hold) == (b.labels, b.name, b.leaf_id, b.cursor, b.anchors_hold)
    # An unfinished last line lies past what a sidecar covers, and a byte order mark makes the file
    # read-only whatever the index says: every open reports both afresh.
    assert mine.warnings == [w for w in scan.warnings if w.kind in SCAN_WARNINGS | {"torn-tail", "read-only"}]
    assert mine.read_only == scan.read_only
    assert (mine.end, mine._line_no) == (scan.end, scan._line_no)
    # each entry's anchor: the nearest thinking change, model setter and compaction on its path
    assert [a.anchors(seq) for seq in range(len(a))] == [b.anchors(seq) for seq in range(len(b))]
    ids = list(b.by_id)
    for entry_id in [None, *ids[:: max(1, len(ids) // 40)], *ids[-3:]]:
        left, right = build_context(a, entry_id, mine.entry), build_context(b, entry_id, scan.entry)
        assert (left.messages, left.model, left.thinking_level) == (right.messages, right.model, right.thinking_level)
    assert flat_tree(a, lambda node: None, []) == flat_tree(b, lambda node: None, [])
