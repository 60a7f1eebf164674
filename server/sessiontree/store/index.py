"""The in-memory index of one session file: entries in file order and what derives from them."""

from __future__ import annotations

from typing import Any

from ..entries import Node, js_trim
from ..protocol import Warning


class SessionIndex:
    """Entries by id and in file order, labels, the name and the leaf.

    Everything here is derived from the file and rebuilt by scanning it; nothing
    is written back. Duplicate ids: the later line wins in lookups (as pi).
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.by_id: dict[str, Node] = {}
        self.labels: dict[str, tuple[Any, Any]] = {}  # target id -> (label, label entry timestamp)
        self.raw_name: Any = None
        self.leaf_id: str | None = None
        self.version = 0  # counts additions, so derived views know when to rebuild
        self.anchors_hold = True  # false once an id repeats: a later line may change an earlier path

    def __len__(self) -> int:
        return len(self.nodes)

    def get(self, entry_id: str) -> Node | None:
        return self.by_id.get(entry_id)

    def add(self, node: Node, line: int, warnings: list[Warning], follow_leaf: bool = False) -> None:
        """Index one entry. `follow_leaf`: move the leaf only when `node` continues it."""
        self._anchor(node)
        if node.id in self.by_id:
            self.anchors_hold = False
            warnings.append(
                Warning(
                    "duplicate-id",
                    f"entry id {node.id} appears again on line {line}; the later line wins",
                    line=line,
                    entry_id=node.id,
                )
            )
        self.by_id[node.id] = node
        self.nodes.append(node)
        self.version += 1
        if node.type == "label":
            self._apply_label(node, line, warnings)
        elif node.type == "session_info":
            self.raw_name = node.setting
        if not follow_leaf or node.parent_id == self.leaf_id:
            self.leaf_id = node.id

    def _anchor(self, node: Node) -> None:
        """Carry the path's settings and last compaction down from the parent, so a context need
        not walk to the root. Only a path that was whole when the entry arrived is anchored."""
        if node.parent_id is None:
            thinking = model = compaction = None
            node.anchored = True
        else:
            parent = self.by_id.get(node.parent_id)
            if parent is None:  # an orphan for now: its parent may still turn up later in the file
                return
            thinking, model, compaction = parent.thinking_from, parent.model_from, parent.compaction_from
            node.anchored = parent.anchored
        kind = node.type
        if kind == "thinking_level_change":
            thinking = node
        elif kind == "model_change" or (kind == "message" and node.role == "assistant"):
            model = node
        elif kind == "compaction":
            compaction = node
        node.thinking_from, node.model_from, node.compaction_from = thinking, model, compaction

    def _apply_label(self, node: Node, line: int, warnings: list[Warning]) -> None:
        target, label = node.setting
        if not isinstance(target, str) or target not in self.by_id:
            warnings.append(
                Warning(
                    "label-unknown-target",
                    f"label entry {node.id} on line {line} targets unknown entry {target}",
                    line=line,
                    entry_id=node.id,
                )
            )
        if not isinstance(target, str):
            return
        if label:
            self.labels[target] = (label, node.timestamp)
        else:
            self.labels.pop(target, None)

    @property
    def name(self) -> str | None:
        """pi 0.73: the newest session_info wins; a blank name clears it."""
        return js_trim(self.raw_name) or None if isinstance(self.raw_name, str) else None

    @property
    def cursor(self) -> str | None:
        """The id of the last entry in file order: where a follower resumes."""
        return self.nodes[-1].id if self.nodes else None
