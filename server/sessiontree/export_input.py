"""What an export reads from an open session: its entries one at a time, the outline a document
needs before its first entry, and the facts its page opens with.

The outline comes from the index (ids, types, roles, the folded tree), not from the entries: only
the rare context edits on the leaf's path are read for it. The entries are decoded as the document
is written, one at a time, so an export holds no more of a large session than its index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import export, stats
from .open_session import OpenSession
from .shown import as_text, finite
from .tree.folded import FoldedTree


def path_items(opened: OpenSession, leaf: int | None) -> tuple[list[int], Iterator[export.Item]]:
    """The seqs from the root to `leaf` and their items, decoded as they are taken."""
    session = opened.session
    seqs = [] if leaf is None else session.index.walk(leaf)[0]
    items = (export.Item(session.entry(session.index.node(seq)), is_leaf=seq == leaf) for seq in seqs)
    return seqs, items


def counted(items: Iterable[export.Item], total: int, progress: Callable[[int, int], None]) -> Iterator[export.Item]:
    """The items, `progress(done, total)` told after each is written."""
    progress(0, total)
    for done, item in enumerate(items, 1):
        yield item
        progress(done, total)


def tree_items(opened: OpenSession, leaf: int | None) -> Iterator[export.Item]:
    """Every entry in tree order, with its branch depth; the path to `leaf` marked."""
    session = opened.session
    for seq, depth, starts, on_path in _tree_order(opened.folded(), session.index, leaf):
        yield export.Item(session.entry(session.index.node(seq)), depth, starts, on_path, seq == leaf)


def _tree_order(folded: FoldedTree, index: Any, leaf: int | None) -> Iterator[tuple[int, int, bool, bool]]:
    """(seq, branch depth, starts a branch, on the path to `leaf`) of every entry, in tree order."""
    path = None if leaf == folded.leaf else set() if leaf is None else set(index.walk(leaf)[0])
    for row in folded.rows:
        for seq in range(row.first, row.last + 1):
            parent = index.parent_seq(seq)
            starts = parent is not None and parent != seq and len(folded.children(parent)) > 1
            yield seq, row.indent, starts, folded.on_path(seq) if path is None else seq in path


def outline(opened: OpenSession, leaf: int | None, tree: bool) -> export.Outline:
    session, index = opened.session, opened.session.index
    on_path = [] if leaf is None else index.walk(leaf)[0]
    edited = [export.Item(session.entry(index.node(seq))) for seq in on_path if _kind(index, seq)[0] == "context_edit"]
    branches: list[tuple[int, str]] = []
    if tree:
        for n, (seq, _, starts, on_leaf_path) in enumerate(_tree_order(opened.folded(), index, leaf)):
            if starts:
                entry_type, role = _kind(index, seq)
                title = export.heading({"type": entry_type, "message": {"role": role}} if role else {"type": entry_type})
                branches.append((n, export.branch_label(title[1], index.ids[seq], on_leaf_path)))
    return export.Outline(export.context_edits(edited), branches)


def _kind(index: Any, seq: int) -> tuple[str, str | None]:
    kind: tuple[str, str | None] = index.kinds.values[index.kinds.codes[seq]]
    return kind


def facts(opened: OpenSession, shown: int) -> export.SessionFacts:
    """The session's cwd, first and last dates, size, models and cost (of every branch)."""
    session, index = opened.session, opened.session.index
    count = len(index)
    first = session.header.get("timestamp") if count == 0 else index.node(0).timestamp
    last = index.node(count - 1).timestamp if count else first
    figures = opened.stats()[0].wire()
    models = tuple(model for model in figures["byModel"] if model not in ("unknown", stats.UNATTRIBUTED))
    cost = finite(figures["usage"]["cost"].get("total"))
    return export.SessionFacts(as_text(session.header.get("cwd")), _date(first), _date(last), count, shown, models,
                               cost if figures["usage"]["usages"] else None)


def _date(stamp: Any) -> str:
    """A timestamp as the session wrote it (ISO 8601 in UTC, for pi): exact, and read anywhere."""
    return as_text(stamp)
