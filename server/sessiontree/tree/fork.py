"""The lines of a forked session: pi's createBranchedSession and forkFrom.

Lines are copied as they are on disk (never re-serialized), in stretches that are
contiguous in the source file, one read each, except where a kept entry points at
a dropped label entry. pi leaves such an entry pointing at nothing: a child of a
label becomes an orphan root (losing the start of the conversation), a compaction
that keeps from a label keeps nothing. Here the child is re-parented to the
previous kept entry and the compaction keeps from the entry after the label, so
the fork's context equals the original's.

A plan says where each line comes from, so the new session is indexed from the
source's columns instead of by scanning the file just written.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from .. import jsonfmt
from ..entries import Either, new_entry_id
from ..store import Session, SessionIndex
from ..store.fork_plan import Copy, ForkPlan, Part


def _copies(session: Session, seqs: list[int]) -> list[Part]:
    """`seqs` as stretches of lines that follow each other in the file."""
    if not seqs:
        return []
    # Stretches of consecutive entries; a stretch is whole unless a malformed line sits inside it.
    bounds = [0, *[at for at in range(1, len(seqs)) if seqs[at] != seqs[at - 1] + 1], len(seqs)]
    offsets, lengths = session.index.offsets, session.index.lengths
    parts: list[Part] = []
    for start, stop in pairwise(bounds):
        first, last = seqs[start], seqs[stop - 1]
        if offsets[last] - offsets[first] == sum(lengths[first:last]) + last - first:
            parts.append(Copy(seqs[start:stop]))
        else:
            parts += _split_at_gaps(session, seqs[start:stop])
    return parts


def _split_at_gaps(session: Session, seqs: list[int]) -> list[Part]:
    offsets, lengths = session.index.offsets, session.index.lengths
    parts: list[Part] = []
    stretch: list[int] = []
    for seq in seqs:
        if stretch and offsets[seq] != offsets[seq - 1] + lengths[seq - 1] + 1:
            parts.append(Copy(stretch))
            stretch = []
        stretch.append(seq)
    parts.append(Copy(stretch))
    return parts


def branched_plan(session: Session, path: list[int]) -> ForkPlan:
    """The path without its label entries, then the labels of kept entries re-created at its end."""
    index = session.index
    labels = _codes_of(index, "label")
    codes = index.kinds.codes
    dropped = [at for at, seq in enumerate(path) if codes[seq] in labels]
    after = _kept_after_labels(index, path, dropped)
    # Entries copied as they are, except those the loop below rewrites: the child of a dropped
    # label, and a compaction that kept from one.
    rewrite = {at + 1 for at in dropped if at + 1 < len(path) and codes[path[at + 1]] not in labels}
    if after:
        compactions = _codes_of(index, "compaction")
        rewrite |= {at for at, seq in enumerate(path) if codes[seq] in compactions}
    plan = ForkPlan(path=True)
    skip = set(dropped)
    done = 0  # path positions before this are planned
    for at in sorted(rewrite):
        plan.parts += _copies(session, [seq for position, seq in enumerate(path[done:at], done) if position not in skip])
        plan.parts.append(_rewritten(session, path, at, after, skip))
        done = at + 1
    plan.parts += _copies(session, [seq for position, seq in enumerate(path[done:], done) if position not in skip])
    kept = _Kept(index, set(path), labels)
    plan.parts.extend(_label_lines(session, kept, _kept_id_before(index, path, len(path), skip)))
    return plan


def _kept_id_before(index: SessionIndex, path: list[int], at: int, skip: set[int]) -> str | None:
    """The id of the last entry the fork keeps before path position `at`."""
    return next((index.ids[path[p]] for p in range(at - 1, -1, -1) if p not in skip), None)


def _rewritten(session: Session, path: list[int], at: int, after: dict[str, str | None], skip: set[int]) -> bytes:
    """A path entry whose line may change: re-parented past dropped labels, or a compaction keeping
    from the entry after a dropped label. Its own bytes when neither applies."""
    index = session.index
    node = index.node(path[at])
    entry = session.entry(node)
    reparent = at - 1 in skip
    keeps_label = node.type == "compaction" and entry.get("firstKeptEntryId") in after
    if not reparent and not keeps_label:
        return session.raw(node)
    if reparent:
        entry["parentId"] = _kept_id_before(index, path, at, skip)
    if keeps_label:  # the kept part began at a label: begin it at the entry after it
        entry["firstKeptEntryId"] = after[entry["firstKeptEntryId"]]
    return jsonfmt.dumps(entry)


class _Kept:
    """Is this entry id one the fork keeps (on the path, not a label)? Without a set of every id."""

    def __init__(self, index: SessionIndex, on_path: set[int], labels: set[int]) -> None:
        self.index, self.on_path, self.labels = index, on_path, labels

    def __contains__(self, entry_id: object) -> bool:
        seq = self.index.by_id.get(entry_id) if isinstance(entry_id, str) else None
        return seq is not None and seq in self.on_path and self.index.kinds.codes[seq] not in self.labels


def _codes_of(index: SessionIndex, type_: str) -> set[int]:
    return {code for code, kind in enumerate(index.kinds.values) if kind is not None and kind[0] == type_}


def _kept_after_labels(index: SessionIndex, path: list[int], dropped: list[int]) -> dict[str, str | None]:
    """For each label entry on the path (at the positions `dropped`), the next entry the fork keeps."""
    after: dict[str, str | None] = {}
    skip = set(dropped)
    for at in dropped:
        following = next((path[p] for p in range(at + 1, len(path)) if p not in skip), None)
        after[index.ids[path[at]]] = None if following is None else index.ids[following]
    return after


def _label_lines(session: Session, kept: _Kept, parent: str | None) -> list[bytes]:
    made: set[str] = set()
    lines = []
    for target, (label, timestamp) in session.index.labels.items():
        if target not in kept:
            continue
        entry_id = new_entry_id(Either(kept, made))
        made.add(entry_id)
        label_entry: dict[str, Any] = {
            "type": "label",
            "id": entry_id,
            "parentId": parent,
            "timestamp": timestamp,  # the original label time, as pi 0.73 keeps it
            "targetId": target,
            "label": label,
        }
        lines.append(jsonfmt.dumps(label_entry))
        parent = entry_id
    return lines


def whole_plan(session: Session) -> ForkPlan:
    """pi's forkFrom: every entry of the source, in file order."""
    plan = ForkPlan(path=False)
    plan.parts = _copies(session, list(range(len(session.index))))
    return plan

