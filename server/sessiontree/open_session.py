"""A session the daemon has open, with what it caches about it (contexts, previews, the tree,
the folded tree, stats), and who hears of other writers' entries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from . import jsonfmt, protocol, stats
from .entries import Node
from .file_warning import FileWarning
from .store import Session
from .summary_types import CompactionSettings
from .tree import ContextCache, flat_tree
from .tree.folded import FoldedTree, flat_nodes
from .tree.preview import preview_of_line, previews_of_lines
from .tree.tree import tree_wire
from .tree_nodes import TreeNodes

ChangeListener = Callable[[protocol.DidChangeParams], None]


class OpenSession:
    """A session this daemon has open, with what it caches about it."""

    def __init__(self, session: Session, path: Path, listener: ChangeListener | None) -> None:
        self.session = session
        self.path = path
        self.listener = listener
        self.subscribed = False
        self.context_cache = ContextCache()
        self.previews: dict[int, str | None] = {}  # by line offset: a line's text never changes
        self._tree: tuple[int, TreeNodes, list[FileWarning]] | None = None  # (index version, ...)
        self._folded: tuple[tuple[int, str | None], FoldedTree] | None = None  # (index version, leaf)
        self._stats: tuple[tuple[int, str | None], tuple[stats.Stats, stats.Stats]] | None = None
        self.context_window: int | None = None  # registered with session/configure, for advice
        self.compaction_settings = CompactionSettings()

    @property
    def id(self) -> str:
        session_id: str = self.session.header["id"]
        return session_id

    def sync(self, limit: int | None = None) -> None:
        """Take in what other processes appended (at most about `limit` bytes), and tell the listener."""
        leaf = self.session.index.leaf_id
        self.took_in(self.session.refresh(limit), leaf)

    def took_in(self, nodes: list[Node], leaf_before: str | None) -> None:
        """Other writers' entries arrived: cached projections may no longer hold."""
        if not nodes:
            return
        self.context_cache.clear()
        if self.listener is not None:
            index = self.session.index
            self.listener(
                protocol.DidChangeParams(
                    session_id=self.id,
                    entries=[self.session.raw_entry(node) for node in nodes],  # type: ignore[misc]  # RawJson passes for a dict (protocol._is_json_payload)
                    leaf_id=index.leaf_id,
                    cursor=index.cursor,
                    leaf_moved=index.leaf_id != leaf_before,
                )
            )

    def tree(self) -> tuple[TreeNodes, list[FileWarning]]:
        """The flat tree, built again only when an entry was added since (moving the leaf changes no node)."""
        version = self.session.index.version
        if self._tree is None or self._tree[0] != version:
            warnings: list[FileWarning] = []
            previews = self._read_previews()
            made = flat_nodes(self.folded(), previews)  # a stretch at a time, where no parent follows its child
            nodes = TreeNodes(made if made is not None else flat_tree(self.session.index, previews.__getitem__, warnings))
            nodes.wire = orjson.Fragment(jsonfmt.dumps_wire(tree_wire(nodes)))  # as the converter would write it
            self._tree = (version, nodes, warnings)
        return self._tree[1], self._tree[2]

    def _read_previews(self) -> list[str | None]:
        """Every entry's preview by seq; those not previewed yet are read in big blocks (a first tree)."""
        index, previews = self.session.index, self.previews
        offsets = index.offsets
        missing = [seq for seq in range(len(index)) if offsets[seq] not in previews]
        if missing:
            found = previews_of_lines(self.session.storage.read, offsets, index.lengths, missing)
            previews.update(zip([offsets[seq] for seq in missing], found, strict=True))
        return [previews[offset] for offset in offsets]

    def stats(self) -> tuple[stats.Stats, stats.Stats]:
        """The figures of the whole tree and of the leaf's path, kept until the index or leaf changes."""
        index = self.session.index
        key = (index.version, index.leaf_id)
        if self._stats is None or self._stats[0] != key:
            folded, read = self.folded(), self.session.storage.read
            branching = {seq for seq in folded.extra if len(folded.children(seq)) > 1}
            known: dict[int, stats.Facts | None] = {}
            tree = stats.collect(index, range(len(index)), read, known)
            tree.branch_points = len(branching)
            leaf = folded.leaf
            on_path = [] if leaf is None else index.walk(leaf)[0]
            path = stats.collect(index, on_path, read, known)
            path.branch_points = sum(1 for seq in on_path if seq in branching)
            self._stats = (key, (tree, path))
        return self._stats[1]

    def folded(self) -> FoldedTree:
        """The folded tree, made again only when an entry was added or the leaf moved."""
        index = self.session.index
        key = (index.version, index.leaf_id)
        if self._folded is None or self._folded[0] != key:
            self._folded = (key, FoldedTree(index))
        return self._folded[1]

    def preview(self, seq: int) -> str | None:
        index = self.session.index
        offset = index.offsets[seq]
        if offset not in self.previews:
            self.previews[offset] = preview_of_line(self.session.storage.read(offset, index.lengths[seq]))
        return self.previews[offset]
