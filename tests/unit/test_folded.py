"""session/treeView: the folded tree is the flat tree, with runs folded and pages cut.

Whatever the shape (random trees, the damaged and unusual pi-quirk files, entries arriving one by
one), unfolding every run row gives pi's getTree order exactly, each run is a stretch of entries
with one child and nothing to show, and the indentation steps in at each branch point.
"""

from __future__ import annotations

import shutil
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree import protocol as p
from sessiontree.errors import EntryNotFound, InvalidParams
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.store import MemoryStorage, Session, SessionIndex
from sessiontree.tree import flat_tree
from sessiontree.tree.folded import FoldedTree, Row, flat_nodes
from support.messages import assistant, ts, user
from support.sessions import PI_QUIRK_CASES, session_bytes


def unfolded(tree: FoldedTree) -> list[int]:
    return [seq for row in tree.rows for seq in range(row.first, row.last + 1)]


def check(session: Session) -> FoldedTree:
    index = session.index
    tree = FoldedTree(index)
    warnings: list[p.FileWarning] = []
    flat = flat_tree(index, lambda seq: None, warnings)
    on_cycle = {w.entry_id for w in warnings if w.kind == "cycle"} if warnings else set()
    expected = [index.by_id[node.id] for node in flat]
    if not on_cycle:
        assert unfolded(tree) == expected
    else:  # entries on a parent cycle, which no root reaches, are left out of the folded view
        assert set(unfolded(tree)) <= set(expected)
    for row in tree.rows:
        for seq in range(row.first, row.last):
            assert tree.children(seq) == [seq + 1]
        if row.is_run:
            assert not set(range(row.first, row.last + 1)) & tree.shown
    for before, after in pairwise(tree.rows):
        if after.indent > before.indent:
            assert after.indent == before.indent + 1 and len(tree.children(before.last)) > 1
    assert tree._rows == [len(tree._local_rows(stretch)) for stretch in range(len(tree.heads))]  # counted as listed
    previews = [f"p{seq}" if seq % 3 else None for seq in range(len(index))]
    made = flat_nodes(FoldedTree(index), previews)
    if made is not None:  # made a stretch at a time (where no parent follows its child): the flat tree, node for node
        assert made == flat_tree(index, previews.__getitem__, [])
    check_pages(index)
    return tree


def _spans(rows: list[Row]) -> list[tuple[int, int, int]]:
    return [(row.first, row.last, row.indent) for row in rows]


def check_pages(index: SessionIndex) -> None:
    """Pages, positions and the count agree with the rows listed whole (made the first-page way)."""
    rows = _spans(FoldedTree(index).rows)
    for limit in (1, 3, 200):
        tree = FoldedTree(index)
        assert _spans(tree.page(0, limit)) == rows[:limit]  # before any walk
        assert tree.total == len(rows)
        for offset in range(0, len(rows) + 2, limit):
            assert _spans(tree.page(offset, limit)) == rows[offset : offset + limit]
    tree = FoldedTree(index)
    for position, (first, last, _) in enumerate(rows):
        assert tree.find(first) == position and tree.find(last) == position
    listed = {seq for first, last, _ in rows for seq in range(first, last + 1)}
    assert all(tree.find(seq) is None for seq in range(len(index)) if seq not in listed)
    check_leaf_path(index)


def check_leaf_path(index: SessionIndex) -> None:
    """The leaf's path reads the same from its intervals through the jumps and from the rows below
    each stretch (what `on_path` reads where parents come before children), and is the walk from
    the leaf to its root."""
    tree = FoldedTree(index)
    found = [any(first <= seq <= last for first, last in tree.path) for seq in range(len(index))]
    assert [tree.on_path(seq) for seq in range(len(index))] == found
    if tree.leaf is not None and not any(w.kind == "cycle" for w in _warnings(index)):
        assert {seq for seq, on in enumerate(found) if on} == set(index.walk(tree.leaf)[0])


def _warnings(index: SessionIndex) -> list[p.FileWarning]:
    warnings: list[p.FileWarning] = []
    flat_tree(index, lambda seq: None, warnings)
    return warnings


# A tree drawn at random: each entry's parent is the entry before it (most), an earlier one (a
# branch or a resume), or none (a new root); some are labelled or compactions.
shapes = st.lists(st.tuples(st.sampled_from(["next", "next", "next", "earlier", "root"]), st.integers(0, 10**6),
                            st.sampled_from(["user", "user", "label", "compaction"])), min_size=1, max_size=120)


def _random_session(steps: list[tuple[str, int, str]], in_order: bool = False) -> bytes:
    entries: list[dict[str, Any]] = []
    for seq, (how, pick, kind) in enumerate(steps):
        parent = None
        if entries and how == "next":
            parent = entries[-1]["id"]
        elif entries and how == "earlier":
            parent = entries[pick % len(entries)]["id"]
        entry_id = f"e{seq:07d}"
        if kind == "label" and entries:
            entries.append({"type": "label", "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:00.000Z",
                            "targetId": entries[pick % len(entries)]["id"], "label": "L"})
        elif kind == "compaction" and entries:
            entries.append({"type": "compaction", "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:00.000Z",
                            "summary": "s", "firstKeptEntryId": entries[0]["id"], "tokensBefore": 1})
        else:
            entries.append(user(entry_id, parent, "q", second=pick % 50))
    if in_order:  # stamped as pi stamps them, each no earlier than the line before (some equal)
        for seq, entry in enumerate(entries):
            entry["timestamp"] = ts(seq // 2)
    return session_bytes(*entries)


@given(shapes)
@settings(max_examples=150, deadline=None)
def test_unfolding_every_run_gives_pis_tree_order(steps: list[tuple[str, int, str]]) -> None:
    check(Session.load(MemoryStorage(_random_session(steps))))


@given(shapes)
@settings(max_examples=100, deadline=None)
def test_a_file_in_time_order_folds_without_comparing_times(steps: list[tuple[str, int, str]]) -> None:
    session = Session.load(MemoryStorage(_random_session(steps, in_order=True)))
    assert session.index.siblings_in_time_order()
    check(session)


def test_sibling_time_order_is_kept_as_entries_arrive_and_lost_to_an_odd_or_earlier_time() -> None:
    entries = [user(f"e{seq:07d}", f"e{seq - 1:07d}" if seq else None, "q", second=seq) for seq in range(6)]
    data = session_bytes(*entries)
    lines = data.splitlines(keepends=True)
    storage = MemoryStorage(b"".join(lines[:3]))
    session = Session.load(storage)
    assert session.index.siblings_in_time_order()
    storage.data += b"".join(lines[3:])
    session.refresh()
    assert session.index.siblings_in_time_order() and Session.load(MemoryStorage(data)).index.siblings_in_time_order()
    earlier = dict(entries[5], id="late", parentId=entries[2]["id"], timestamp=ts(1))
    odd = dict(entries[5], id="odd", parentId=entries[2]["id"], timestamp="2025-01-01T00:00:09Z")
    for entry in (earlier, odd, dict(entries[5], id="none", timestamp=None)):
        index = Session.load(MemoryStorage(data + session_bytes(entry).split(b"\n", 1)[1])).index
        assert not index.siblings_in_time_order()
        check(Session.load(MemoryStorage(data + session_bytes(entry).split(b"\n", 1)[1])))


@given(shapes, st.integers(1, 119))
@settings(max_examples=60, deadline=None)
def test_jumps_extended_as_entries_arrive_fold_as_a_fresh_scan(steps: list[tuple[str, int, str]], cut: int) -> None:
    data = _random_session(steps)
    lines = data.splitlines(keepends=True)
    storage = MemoryStorage(b"".join(lines[: 1 + cut]))
    session = Session.load(storage)
    FoldedTree(session.index)
    storage.data += b"".join(lines[1 + cut :])
    session.refresh()
    kept = check(session)
    fresh = Session.load(MemoryStorage(data)).index
    assert session.index.jumps() == fresh.jumps()
    assert session.index.jump_parents() == fresh.jump_parents()
    assert session.index.siblings_in_time_order() == fresh.siblings_in_time_order()
    listed = (fresh.jump_parents(), fresh.siblings_in_time_order())
    fresh._filed, fresh._branches, fresh._unparented, fresh._parent_later, fresh._siblings_in_order = 0, {}, [], False, True
    assert (fresh.jump_parents(), fresh.siblings_in_time_order()) == listed  # jumps listed without being filed: filed on use
    assert _spans(kept.rows) == _spans(FoldedTree(fresh).rows)


@pytest.mark.parametrize("case", sorted(PI_QUIRK_CASES.glob("*.jsonl")), ids=lambda path: path.name)
def test_every_pi_quirk_file_folds_to_its_tree(case: Path) -> None:
    try:
        session = Session.load(MemoryStorage(case.read_bytes()))
    except Exception:  # not a session file, or an old version: the tree test of those is elsewhere
        pytest.skip("does not open as it is")
    check(session)


def test_a_long_linear_session_is_three_rows_and_its_run_pages_by_seq() -> None:
    entries = [user("e0000000", None, "first")]
    entries += [user(f"e{seq:07d}", f"e{seq - 1:07d}", f"q{seq}") for seq in range(1, 5000)]
    session = Session.load(MemoryStorage(session_bytes(*entries)))
    tree = check(session)
    assert [(r.first, r.last) for r in tree.rows] == [(0, 0), (1, 4998), (4999, 4999)]
    assert tree.on_path(2500) and tree.leaf == 4999


@pytest.fixture
def service(tmp_path: Path) -> SessionService:
    return SessionService(ServiceConfig(tmp_path / "sessions"))


def _demo(service: SessionService) -> str:
    path = service.root / "--w--" / "demo.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl", path)
    return service.open(p.OpenParams(str(path))).session_id


def test_pages_reveal_and_runs_through_the_service(service: SessionService) -> None:
    sid = _demo(service)
    whole = service.tree_view(p.TreeViewParams(sid))
    assert whole.total == len(whole.rows) == 12 and whole.leaf_id == "9d0e1f2a"
    assert [r.id for r in whole.rows if r.leaf] == ["9d0e1f2a"]
    assert [r.label for r in whole.rows if r.label] == ["diagnosis"]
    assert {r.type for r in whole.rows} >= {"compaction", "branch_summary"}
    page = service.tree_view(p.TreeViewParams(sid, offset=4, limit=4))
    assert [r.id for r in page.rows] == [r.id for r in whole.rows[4:8]] and page.offset == 4
    revealed = service.tree_view(p.TreeViewParams(sid, limit=5, reveal="9d0e1f2a"))
    assert revealed.offset == 10 and revealed.rows[-1].leaf
    run = next(r for r in whole.rows if r.run)
    inside = service.tree_view(p.TreeViewParams(sid, run=run.id))
    assert inside.total == run.run.count and inside.rows[-1].id == run.run.last_id
    assert all(not r.run for r in inside.rows)
    service.branch(p.BranchParams(sid, entry_id="2c3d4e5f"))
    moved = service.tree_view(p.TreeViewParams(sid))
    assert [r.id for r in moved.rows if r.leaf] == ["2c3d4e5f"]
    assert {r.id for r in moved.rows if r.on_leaf_path} >= {"0a1b2c3d", "1b2c3d4e", "2c3d4e5f"}


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"limit": 0}, InvalidParams),
        ({"limit": 2001}, InvalidParams),
        ({"offset": -1}, InvalidParams),
        ({"run": "9d0e1f2a"}, InvalidParams),  # an entry row, not a run
        ({"run": "b2c3d4e5", "reveal": "9d0e1f2a"}, InvalidParams),
        ({"reveal": "ffffffff"}, EntryNotFound),
    ],
)
def test_bad_params_are_clear_errors(service: SessionService, params: dict[str, Any], error: type) -> None:
    sid = _demo(service)
    with pytest.raises(error):
        service.tree_view(p.TreeViewParams(sid, **params))


def test_an_append_shows_at_once(service: SessionService) -> None:
    sid = _demo(service)
    service.tree_view(p.TreeViewParams(sid))
    entry = assistant("ignored", None, "more")
    message = entry["message"]
    appended = service.append(p.AppendParams(sid, entry={"type": "message", "message": message}))
    rows = service.tree_view(p.TreeViewParams(sid)).rows
    assert rows[-1].id == appended.id and rows[-1].leaf
