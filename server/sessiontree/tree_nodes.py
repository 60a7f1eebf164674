"""A session's tree as the domain builds it: flat nodes (tree/tree) and folded rows (tree/folded)."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define
class TreeNode:
    id: str
    parent_id: str | None
    type: str
    timestamp: str
    depth: int
    child_count: int
    label: str | None = None
    label_timestamp: str | None = None
    role: str | None = None
    preview: str | None = None


class TreeNodes(list[TreeNode]):
    """The nodes of a tree, remembering their wire form: a session's tree is sent again and again
    while nothing is appended, and converting 100,000 nodes costs more than building them."""

    wire: Any = None


@attrs.define
class TreeRun:
    count: int
    last_id: str


@attrs.define
class TreeRow:
    id: str
    type: str
    indent: int
    timestamp: str
    preview: str | None
    role: str | None = None
    label: str | None = None
    children: int | None = None
    run: TreeRun | None = None
    on_leaf_path: bool | None = None
    leaf: bool | None = None
