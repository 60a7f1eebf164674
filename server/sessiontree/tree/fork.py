"""The lines of a forked session: pi's createBranchedSession and forkFrom.

Lines are copied as they are on disk (never re-serialized), except where a kept
entry's parent was a dropped label entry: pi leaves such an entry pointing at
nothing (an orphan root, losing the start of the conversation); here it is
re-parented to the previous kept entry, so the fork's context equals the original's.

Each line comes with the node it was copied from (None for a line made anew), so the
new session can be indexed without scanning the file just written.
"""

from __future__ import annotations

from typing import Any

from .. import jsonfmt
from ..entries import Node, new_entry_id
from ..store import Session

Line = tuple[bytes, Node | None]  # the bytes of a line, and the node it is a verbatim copy of


def branched_lines(session: Session, path: list[Node]) -> list[Line]:
    """The path without its label entries, then the labels of kept entries re-created at its end."""
    dropped = {node.id for node in path if node.type == "label"}
    lines: list[Line] = []
    kept_ids: set[str] = set()
    previous: str | None = None
    for node in path:
        if node.id in dropped:
            continue
        if node.parent_id in dropped:
            entry = session.entry(node)
            entry["parentId"] = previous
            lines.append((jsonfmt.dumps(entry), None))
        else:
            lines.append((session.raw(node), node))
        kept_ids.add(node.id)
        previous = node.id
    lines.extend(_label_lines(session, kept_ids, previous))
    return lines


def _label_lines(session: Session, kept_ids: set[str], parent: str | None) -> list[Line]:
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
        lines.append((jsonfmt.dumps(label_entry), None))
        parent = entry_id
    return lines


def all_lines(session: Session) -> list[Line]:
    """pi's forkFrom: every entry of the source, in file order."""
    return [(session.raw(node), node) for node in session.index.nodes]
