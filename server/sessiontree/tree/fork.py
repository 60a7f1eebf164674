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

from collections.abc import Iterator
from typing import Any

from .. import jsonfmt
from ..entries import new_entry_id
from ..store import Session, SessionIndex


class Copy:
    """Source entries whose lines follow each other in the source file (so their seqs do too):
    copied in one read."""

    __slots__ = ("seqs",)

    def __init__(self, seqs: list[int]) -> None:
        self.seqs = seqs


Part = Copy | bytes  # copied lines, or one line made anew


class ForkPlan:
    """The new file's entry lines, in order. `path`: the entries form one chain (a path's fork)."""

    def __init__(self, path: bool) -> None:
        self.parts: list[Part] = []
        self.path = path

    def chunks(self, session: Session) -> Iterator[bytes]:
        """The bytes of the lines, line ends included."""
        index = session.index
        for part in self.parts:
            if isinstance(part, Copy):
                start, last = index.offsets[part.seqs[0]], part.seqs[-1]
                length = index.offsets[last] + index.lengths[last] - start
                data = session.storage.read(start, length + 1)  # with the line end after it: no copy to add one
                yield data if data[length:] == b"\n" else data[:length] + b"\n"  # the file's unended last line
            else:
                yield part + b"\n"


def _copies(session: Session, seqs: list[int]) -> list[Part]:
    """`seqs` as stretches of lines that follow each other in the file."""
    offsets, lengths = session.index.offsets, session.index.lengths
    parts: list[Part] = []
    stretch: list[int] = []
    for seq in seqs:
        if stretch and (seq != stretch[-1] + 1 or offsets[seq] != offsets[seq - 1] + lengths[seq - 1] + 1):
            parts.append(Copy(stretch))
            stretch = []
        stretch.append(seq)
    if stretch:
        parts.append(Copy(stretch))
    return parts


def branched_plan(session: Session, path: list[int]) -> ForkPlan:
    """The path without its label entries, then the labels of kept entries re-created at its end."""
    index = session.index
    labels = _codes_of(index, "label")
    compactions = _codes_of(index, "compaction")
    codes = index.kinds.codes
    after = _kept_after_labels(index, path, labels)
    plan = ForkPlan(path=True)
    kept: list[int] = []  # the stretch of kept entries since the last line made anew
    previous: int | None = None  # the last kept entry
    after_label = False  # the entry before on the path (its parent) was a dropped label
    for seq in path:
        code = codes[seq]
        if code in labels:
            after_label = True
            continue
        entry = session.entry(index.node(seq)) if after and code in compactions else None
        keeps_label = entry is not None and entry.get("firstKeptEntryId") in after
        if after_label or keeps_label:
            plan.parts += _copies(session, kept)
            kept = []
            entry = entry or session.entry(index.node(seq))
            if after_label:
                entry["parentId"] = None if previous is None else index.ids[previous]
            if keeps_label:  # the kept part began at a label: begin it at the entry after it
                entry["firstKeptEntryId"] = after[entry["firstKeptEntryId"]]
            plan.parts.append(jsonfmt.dumps(entry))
            after_label = False
        else:
            kept.append(seq)
        previous = seq
    plan.parts += _copies(session, kept)
    kept_ids = {index.ids[seq] for seq in path if codes[seq] not in labels}
    plan.parts.extend(_label_lines(session, kept_ids, None if previous is None else index.ids[previous]))
    return plan


def _codes_of(index: SessionIndex, type_: str) -> set[int]:
    return {code for code, kind in enumerate(index.kinds.values) if kind is not None and kind[0] == type_}


def _kept_after_labels(index: SessionIndex, path: list[int], labels: set[int]) -> dict[str, str | None]:
    """For each label entry on the path, the next entry the fork keeps."""
    after: dict[str, str | None] = {}
    following: str | None = None
    for seq in reversed(path):
        if index.kinds.codes[seq] in labels:
            after[index.ids[seq]] = following
        else:
            following = index.ids[seq]
    return after


def _label_lines(session: Session, kept_ids: set[str], parent: str | None) -> list[bytes]:
    taken = set(kept_ids)
    lines = []
    for target, (label, timestamp) in session.index.labels.items():
        if target not in kept_ids:
            continue
        entry_id = new_entry_id(taken)
        taken.add(entry_id)
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
