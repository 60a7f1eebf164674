"""Plain-text views of a session for people: the tree and the context.

Both are iterative: a linear session 100,000 entries deep is a 100,000-level tree, so nothing
here recurses, and a chain of only children stays in one column instead of indenting once per
entry (indentation grows only where the tree branches).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from .protocol import ContextResult, TreeNode, TreeResult
from .shown import as_text, json_text

PREVIEW_CHARS: Final = 80
MAX_COLUMNS: Final = 40  # deeper branch nesting is elided with "…"
_LAST, _MIDDLE, _PIPE, _BLANK = "└─ ", "├─ ", "│  ", "   "


def one_line(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tree_lines(tree: TreeResult) -> Iterator[str]:
    """One line per entry: branch glyphs, id, role or type, [label], preview; the leaf marked."""
    child_count: dict[str | None, int] = {None: sum(1 for n in tree.nodes if n.depth == 0)}
    remaining: dict[str | None, int] = dict(child_count)
    column_of: dict[str | None, int] = {None: 0}
    columns: list[str] = []  # per branch level: does that branch still have siblings below?
    for node in tree.nodes:
        parent = node.parent_id if node.depth > 0 and node.parent_id in column_of else None
        base = column_of[parent]
        del columns[base:]
        glyph = ""
        if child_count[parent] > 1:
            remaining[parent] -= 1
            last = remaining[parent] == 0
            glyph = _LAST if last else _MIDDLE
            columns.append(_BLANK if last else _PIPE)
        column_of[node.id] = len(columns)
        child_count[node.id] = remaining[node.id] = node.child_count
        yield _indent(columns, glyph) + _describe(node, node.id == tree.leaf_id)


def _indent(columns: list[str], glyph: str) -> str:
    shown = columns[:-1] if glyph else columns
    if len(shown) > MAX_COLUMNS:
        return "…" + "".join(shown[-MAX_COLUMNS:]) + glyph
    return "".join(shown) + glyph


def _describe(node: TreeNode, is_leaf: bool) -> str:
    kind = node.role or node.type
    label = f" [{node.label}]" if node.label else ""
    preview = f": {one_line(node.preview)}" if node.preview else ""
    return f"{node.id} {kind}{label}{preview}{'  ← leaf' if is_leaf else ''}"


def context_lines(context: ContextResult) -> Iterator[str]:
    """The messages as the model sees them: a header per message, then its text."""
    model = context.model or {}
    model_name = "/".join(as_text(model[k]) for k in ("provider", "modelId") if model.get(k)) or "none"
    yield f"# model: {model_name}  thinking: {context.thinking_level or 'off'}  leaf: {context.leaf_id}"
    for message in context.messages:
        yield ""
        yield f"── {_header(message)} ──"
        yield from _body(message).splitlines() or [""]


def _header(message: dict[str, Any]) -> str:
    role = one_line(as_text(message.get("role", "?")))
    for key in ("toolName", "customType", "command"):
        if message.get(key):
            return f"{role} ({one_line(as_text(message[key]))})"
    return role


def _body(message: dict[str, Any]) -> str:
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        return as_text(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {as_text(message.get('command', ''))}\n{as_text(message.get('output', ''))}"
    return _content_text(message.get("content"))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return as_text(content)
    return "\n".join(_block_text(block) for block in content)


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return as_text(block)
    kind = block.get("type")
    if kind == "text":
        return as_text(block.get("text", ""))
    if kind == "thinking":
        return f"[thinking] {as_text(block.get('thinking', ''))}"
    if kind == "toolCall":
        arguments = json_text(block.get("arguments", {}), indent=False)
        return f"[tool call {as_text(block.get('name', '?'))}] {arguments}"
    if kind == "image":
        return f"[image {as_text(block.get('mimeType', ''))}]".replace(" ]", "]")
    return f"[{as_text(kind)}]"
